package io.coord.testkit;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.curator.drivers.AdvancedTracerDriver;
import org.apache.curator.drivers.EventTrace;
import org.apache.curator.drivers.OperationTrace;

/** Counts the ZooKeeper requests one client sends, as Curator's tracer reports them: one trace per request. */
public final class RequestCounter extends AdvancedTracerDriver {
    private final List<OperationTrace> traces = new CopyOnWriteArrayList<>();

    @Override
    public void addTrace(OperationTrace trace) {
        traces.add(trace);
    }

    @Override
    public void addEvent(EventTrace trace) {}

    /** Requests so far whose path lies under {@code path}. */
    public int count(String path) {
        return (int) traces.stream().filter(t -> under(t, path)).count();
    }

    /** Requests so far under {@code path} whose trace name starts with {@code operation}, e.g. "GetData". */
    public int count(String path, String operation) {
        return (int) traces.stream()
                .filter(t -> under(t, path) && t.getName().startsWith(operation))
                .count();
    }

    /** The names of the requests under {@code path}, in order, for failure messages. */
    public List<String> names(String path) {
        return traces.stream()
                .filter(t -> under(t, path))
                .map(t -> t.getName() + " " + t.getPath())
                .toList();
    }

    public void reset() {
        traces.clear();
    }

    private static boolean under(OperationTrace trace, String path) {
        String p = trace.getPath();
        return p != null && (p.equals(path) || p.startsWith(path + "/"));
    }
}
