package io.coord.queue;

import io.coord.core.CoordinationException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.apache.curator.framework.api.BackgroundCallback;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;

/**
 * Every request goes out in the background and its answer comes back as a future, so that a waiting thread can be
 * interrupted without abandoning a write it already sent. Curator retries each request on connection loss under the
 * client's retry policy; the callbacks only complete futures, so ZooKeeper's event thread never blocks.
 */
final class Zk {
    private Zk() {}

    @FunctionalInterface
    interface Call {
        void send(BackgroundCallback callback) throws Exception;
    }

    static CompletableFuture<CuratorEvent> call(ClientQueues context, Call call) {
        CompletableFuture<CuratorEvent> answer = context.track(new CompletableFuture<>());
        if (answer.isDone()) {
            return answer; // the client is closed
        }
        try {
            call.send((client, event) -> answer.complete(event));
        } catch (Exception e) {
            answer.completeExceptionally(e);
        }
        return answer;
    }

    static Code code(CuratorEvent event) {
        return Code.get(event.getResultCode());
    }

    /** The index of the operation that failed a transaction, or -1 if the server did not say. */
    static int failedOp(CuratorEvent event) {
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

    /** Failures after which a write may or may not have been applied. */
    static boolean isInDoubt(Code code) {
        return code == Code.CONNECTIONLOSS
                || code == Code.OPERATIONTIMEOUT
                || code == Code.SESSIONMOVED
                || code == Code.SESSIONEXPIRED;
    }

    /** True for a failure whose cause is a lost connection or session, as {@link #failure} wraps it. */
    static boolean isInDoubt(Throwable failure) {
        Throwable cause = failure instanceof CoordinationException ? failure.getCause() : failure;
        return cause instanceof KeeperException ke && isInDoubt(ke.code());
    }

    /** Waits for an answer; an interrupt abandons the wait but not the request, which is a read. */
    static <T> T await(CompletableFuture<T> answer, String path) throws InterruptedException {
        try {
            return answer.get();
        } catch (ExecutionException e) {
            throw failure("request on", path, e.getCause());
        }
    }

    /**
     * Waits for an answer whatever interrupts arrive, then restores the interrupt flag. Used once a write is on the
     * wire, or where the caller cannot be interrupted, so that no outcome is ever abandoned half-known.
     */
    static <T> T awaitFully(CompletableFuture<T> answer, String path) {
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
     * Sends a request and sees it through: when Curator's retries run out on a lost connection, waits for the
     * connection and sends again, as long as the session that made the request lives. Only requests whose replay is
     * recognisable (see the callers) go through here. Returns the in-doubt answer if the session changed.
     */
    static CuratorEvent finish(ClientQueues context, long session, String path, Call call) {
        while (true) {
            CuratorEvent event = awaitFully(call(context, call), path);
            if (!isInDoubt(code(event)) || context.sessionId() != session) {
                return event;
            }
            context.awaitConnectedFully(path);
        }
    }

    static CoordinationException failure(String action, String path, Code code) {
        return new CoordinationException(action + " " + path + " failed: " + code, KeeperException.create(code, path));
    }

    static CoordinationException failure(String action, String path, Throwable cause) {
        if (cause instanceof ClientClosedException) {
            return new ClientClosedException(path);
        }
        if (cause instanceof CoordinationException ce) {
            return ce;
        }
        if (cause instanceof KeeperException ke) {
            return failure(action, path, ke.code());
        }
        // Curator throws IllegalStateException from a client that is not started or already closed.
        return new CoordinationException(action + " " + path + " failed: " + cause, cause);
    }
}
