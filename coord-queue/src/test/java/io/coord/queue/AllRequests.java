package io.coord.queue;

import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.curator.drivers.AdvancedTracerDriver;
import org.apache.curator.drivers.EventTrace;
import org.apache.curator.drivers.OperationTrace;

/**
 * Counts every request one client sends, as Curator's tracer reports them. Unlike the testkit's RequestCounter it
 * does not filter by path: Curator traces a transaction without one, and the queue's takes are transactions.
 */
final class AllRequests extends AdvancedTracerDriver {
    private final ConcurrentLinkedQueue<OperationTrace> traces = new ConcurrentLinkedQueue<>();

    @Override
    public void addTrace(OperationTrace trace) {
        // Requests are traced by their builders, "...Impl-Background" or "...Impl-Foreground"; Curator also traces
        // some internal steps (connection-state handling, listeners) that send nothing.
        if (trace.getName().endsWith("-Background") || trace.getName().endsWith("-Foreground")) {
            traces.add(trace);
        }
    }

    @Override
    public void addEvent(EventTrace trace) {}

    int count() {
        return traces.size();
    }

    /** Requests whose tracer name contains {@code kind}, such as "GetChildren" or "Transaction". */
    int count(String kind) {
        return (int) traces.stream().filter(t -> t.getName().contains(kind)).count();
    }

    List<String> names() {
        return traces.stream().map(t -> t.getName() + " " + t.getPath()).toList();
    }

    void reset() {
        traces.clear();
    }
}
