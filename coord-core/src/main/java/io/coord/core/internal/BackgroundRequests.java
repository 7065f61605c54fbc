package io.coord.core.internal;

import io.coord.core.CoordinationException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.curator.framework.api.BackgroundCallback;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;

/**
 * Requests sent in the background with their answers as futures, waits on those futures, resending until the
 * outcome is known, and failures named after the path: how a caller that must be able to give up (at a deadline, on
 * an interrupt) talks to ZooKeeper without abandoning a write it already sent.
 *
 * <p>Every request goes out in the background and its answer comes back as a future, so that a waiting thread can be
 * interrupted, or give up at its deadline, without abandoning a write it already sent. Curator retries each request
 * on connection loss under the client's retry policy; the callbacks only complete futures, so ZooKeeper's event
 * thread never blocks.
 */
public final class BackgroundRequests {
    private static final String EVENT_THREAD = "org.apache.zookeeper.ClientCnxn$EventThread";
    // The name Curator gives its one background thread, unless the client was built with a thread factory of its own.
    private static final String CURATOR_THREAD = "Curator-Framework-";

    private BackgroundRequests() {}

    /**
     * Whether the caller runs on ZooKeeper's event thread (in a watcher, or in a background callback): the thread
     * that delivers every answer and event of its client, so that a wait there for one of them never ends.
     */
    public static boolean onEventThread() {
        return Thread.currentThread().getClass().getName().equals(EVENT_THREAD);
    }

    /**
     * Whether the caller runs on Curator's background thread: the one that sends the requests made while the
     * connection is down, once it is back, and that answers some failures (a request that found no connection within
     * the connection timeout), in background callbacks.
     */
    static boolean onCuratorThread() {
        return Thread.currentThread().getName().startsWith(CURATOR_THREAD);
    }

    /** Whether the caller runs on a thread where a wait for an answer may never end: see {@link #refuseOnEventThread}. */
    public static boolean onCallbackThread() {
        return onEventThread() || onCuratorThread();
    }

    /**
     * Refuses, before anything is sent, a call that would wait on ZooKeeper's event thread for what that thread
     * delivers, where it would wait for ever; or on Curator's background thread, where it would wait for ever as soon
     * as the connection drops, since that thread sends what was asked meanwhile.
     *
     * @throws IllegalStateException naming the call: {@code doing} on {@code path} ("acquiring", "/locks/a")
     */
    public static void refuseOnEventThread(String doing, String path) {
        // The messages are made only on those threads: most callers are on an acquisition's hot path.
        if (onEventThread()) {
            throw new IllegalStateException(doing + " " + path + " waits for ZooKeeper's answers, which ZooKeeper's "
                    + "event thread delivers: call it from another thread than a watcher or a background callback");
        }
        if (onCuratorThread()) {
            throw new IllegalStateException(doing + " " + path + " waits for ZooKeeper's answers, and once the"
                    + " connection drops for requests that Curator's background thread sends: call it from another"
                    + " thread than a background callback");
        }
    }

    /** Sends one request, answering {@code callback}. */
    @FunctionalInterface
    public interface Call {
        void send(BackgroundCallback callback) throws Exception;
    }

    /**
     * Sends a request on {@code path}. Closing the client fails the answer at once (see {@link ClientContext#track}),
     * with the client's closed error naming the path, rather than leave its caller waiting.
     */
    public static CompletableFuture<CuratorEvent> call(ClientContext context, String path, Call call) {
        CompletableFuture<CuratorEvent> answer = new CompletableFuture<>();
        CompletableFuture<CuratorEvent> tracked = context.track(new CompletableFuture<>());
        tracked.whenComplete((event, error) -> {
            if (error == null) {
                answer.complete(event);
            } else {
                answer.completeExceptionally(context.isClosed() ? ClientContext.closedError(path) : error);
            }
        });
        if (tracked.isDone()) {
            return answer; // the client is closed
        }
        try {
            call.send((client, event) -> tracked.complete(event));
        } catch (Exception e) {
            tracked.completeExceptionally(e); // Curator refuses requests on a client not started or closed
        }
        return answer;
    }

    public static Code code(CuratorEvent event) {
        return Code.get(event.getResultCode());
    }

    /** The index of the operation that failed a transaction, or -1 if the server did not say. */
    public static int failedOp(CuratorEvent event) {
        List<CuratorTransactionResult> results = event.getOpResults();
        if (results == null) {
            return -1;
        }
        for (int i = 0; i < results.size(); i++) {
            int error = results.get(i).getError();
            if (error != Code.OK.intValue() && error != Code.RUNTIMEINCONSISTENCY.intValue()) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Waits for the answer of a request that may be abandoned (a read, or an idempotent create) until the deadline.
     *
     * @throws TimeoutException if the deadline passed first; the request goes on without a waiter
     */
    public static <T> T await(CompletableFuture<T> answer, Deadline deadline, String path)
            throws InterruptedException, TimeoutException {
        try {
            return deadline.await(answer);
        } catch (ExecutionException e) {
            throw failure("request on", path, e.getCause());
        }
    }

    /**
     * Waits under the deadline ({@link Deadline#await}). Under {@link Deadline#now()} (the untimed calls, {@code offer},
     * {@code poll}) and {@link Deadline#throughOutages()}, callers never wait for room or for items, but do wait for the
     * answer of a request sent, as long as Curator's retries of it last.
     */
    public static <T> T awaitWithin(CompletableFuture<T> answer, Deadline deadline, String path)
            throws InterruptedException, TimeoutException {
        return deadline.awaitsAnswersFully() ? awaitFully(answer, path) : await(answer, deadline, path);
    }

    /**
     * Waits under the deadline for {@code first}, riding out a lost connection when the deadline allows waiting: a
     * request whose answer is in doubt is sent again with {@code again} once the client is connected.
     *
     * @throws TimeoutException if the deadline passed first, also while waiting for the connection ("no connection to
     *     {@code doing} {@code path}")
     */
    public static <T> T awaitThroughOutages(
            ClientContext context,
            CompletableFuture<T> first,
            Supplier<CompletableFuture<T>> again,
            Deadline deadline,
            String doing,
            String path)
            throws InterruptedException, TimeoutException {
        CompletableFuture<T> next = first;
        while (true) {
            try {
                return awaitWithin(next, deadline, path);
            } catch (CoordinationException e) {
                if (!deadline.allowsWaiting() || !ResultCodes.isInDoubt(e) || context.isClosed()) {
                    throw e;
                }
                if (!context.awaitConnected(deadline)) {
                    throw new TimeoutException("no connection to " + doing + " " + path);
                }
                next = again.get();
            }
        }
    }

    /** A call whose waits go through {@link #awaitWithin} under the deadline it is given. */
    @FunctionalInterface
    public interface Timed<T> {
        T call(Deadline deadline) throws InterruptedException, TimeoutException;
    }

    /**
     * Runs {@code call} with {@link Deadline#throughOutages()}, under which {@link #awaitWithin} waits for each answer
     * as long as it takes, whatever interrupts arrive (the flag is kept), and {@link #awaitConnection} for the
     * connection: for callers that must see their requests through.
     */
    public static <T> T fully(Timed<T> call) {
        try {
            return call.call(Deadline.throughOutages());
        } catch (TimeoutException | InterruptedException e) {
            throw new IllegalStateException("an untimed wait gave up", e);
        }
    }

    /**
     * Waits for the client to be connected, to send a request again: until the deadline, as long as it takes under
     * {@link Deadline#throughOutages()}, and not at all under {@link Deadline#now()}.
     *
     * @throws TimeoutException if the deadline passed first, or under {@link Deadline#now()} if the client is not
     *     connected ("no connection to ZooKeeper for {@code path}")
     */
    public static void awaitConnection(ClientContext context, Deadline deadline, String path)
            throws InterruptedException, TimeoutException {
        if (deadline.allowsWaiting()) {
            awaitWithin(context.connected(), deadline, path);
        } else if (deadline.waitsForConnection()) {
            awaitFully(context.connected(), path); // fails if the client is closed meanwhile
        } else if (!context.isConnected()) {
            throw new TimeoutException("no connection to ZooKeeper for " + path);
        }
    }

    /**
     * Waits for an answer whatever interrupts arrive, then restores the interrupt flag. Used once a write is on the
     * wire, or where the caller cannot be interrupted, so that no outcome is ever abandoned half-known.
     */
    public static <T> T awaitFully(CompletableFuture<T> answer, String path) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return answer.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    throw failure("request on", path, e.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Sends a request until its answer is not in doubt, whatever interrupts arrive, and returns that answer: after a
     * lost connection once the client is connected again, after a busy server's refusal (THROTTLEDOP) once a pause has
     * passed, after a read-only server's refusal of a write (NOTREADONLY) once a connection takes writes. Only for a
     * request whose landing twice cannot pass for once: a read, or a write at a version that the caller tells apart.
     * Fails if the client is closed first. It neither sends while coord counts the client disconnected (a read-only
     * server would answer a read from behind the quorum) nor gives up on a busy server's refusal: the callers settle
     * an outcome in doubt, and failing would leave it unknown to a caller that may then write again.
     */
    public static CuratorEvent answered(ClientContext context, String path, Call call) {
        while (true) {
            awaitFully(context.connected(), path);
            CuratorEvent reply = awaitFully(call(context, path, call), path);
            Code code = code(reply);
            if (code == Code.THROTTLEDOP) {
                awaitFully(context.throttledPause(), path);
            } else if (code == Code.NOTREADONLY) {
                awaitFully(context.writable(), path);
            } else if (!ResultCodes.isInDoubt(code)) {
                return reply;
            }
        }
    }

    public static CoordinationException failure(String action, String path, Code code) {
        return new CoordinationException(action + " " + path + " failed: " + code, KeeperException.create(code, path));
    }

    public static CoordinationException failure(String action, String path, Throwable cause) {
        if (cause instanceof CoordinationException ce) {
            return ce; // the client was closed (ClientContext.closedError), or a failure already named
        }
        if (cause instanceof KeeperException ke) {
            return failure(action, path, ke.code());
        }
        // Curator throws IllegalStateException from a client that is not started or already closed.
        return new CoordinationException(action + " " + path + " failed: " + cause, cause);
    }
}
