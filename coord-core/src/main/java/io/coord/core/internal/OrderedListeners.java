package io.coord.core.internal;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The user's listeners of one object (a lease, an election), each with its executor. Changes are handed over
 * through the object's {@link SerialExecutor}, so every listener hears them in the order they happened, and never on
 * ZooKeeper's event thread. Each listener's calls also run one at a time on its executor, the next only once the one
 * before has returned, so that a pool of many threads cannot overlap or reorder them. A listener that throws, or whose
 * executor refuses a call, is logged and ignored (the refused call is dropped, with any queued behind it).
 */
public final class OrderedListeners<L> {
    private static final Logger log = LoggerFactory.getLogger(OrderedListeners.class);

    /** A listener, and its executor behind a serial queue of its own. */
    private record Registration<L>(L listener, Executor calls) {}

    private final String path;
    private final Executor serial;
    private final List<Registration<L>> registered = new CopyOnWriteArrayList<>();

    public OrderedListeners(String path, Executor serial) {
        this.path = path;
        this.serial = serial;
    }

    public void add(L listener, Executor executor) {
        register(listener, executor);
    }

    /**
     * Adds the listener and tells it alone of a change that happened before, ahead of any change fired after. Call it
     * under the owner's lock, as {@link #fire}.
     */
    public void addAndTell(L listener, Executor executor, String change, Consumer<L> call) {
        Registration<L> r = register(listener, executor);
        serial.execute(() -> deliver(r, change, call));
    }

    private Registration<L> register(L listener, Executor executor) {
        Registration<L> r = new Registration<>(
                Objects.requireNonNull(listener, "listener must not be null"),
                new SerialExecutor(Objects.requireNonNull(executor, "executor must not be null")));
        registered.add(r);
        return r;
    }

    /**
     * Tells every listener registered now. Call it right after the state changed, under the owner's lock, so that
     * changes queue in the order they were made; nothing runs here but an enqueue.
     */
    public void fire(String change, Consumer<L> call) {
        for (Registration<L> r : registered) {
            serial.execute(() -> deliver(r, change, call));
        }
    }

    private void deliver(Registration<L> r, String change, Consumer<L> call) {
        try {
            r.calls().execute(() -> {
                try {
                    call.accept(r.listener());
                } catch (RuntimeException | Error e) { // an AssertionError too must not stop the calls behind it
                    log.warn("listener {} failed on {} for {}", r.listener(), change, path, e);
                }
            });
        } catch (RuntimeException e) { // refused, or failed otherwise: this call is dropped, later ones are heard
            log.warn("executor of listener {} rejected {} for {}", r.listener(), change, path, e);
        }
    }

    boolean isEmpty() {
        return registered.isEmpty();
    }
}
