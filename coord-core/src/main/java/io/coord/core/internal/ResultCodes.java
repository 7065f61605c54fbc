package io.coord.core.internal;

import io.coord.core.CoordinationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;

/** The one table of ZooKeeper result codes that every module consults: which failures to retry, which leave doubt. */
public final class ResultCodes {
    private ResultCodes() {}

    /**
     * The connection or session went away under the request: a write may or may not have been applied, and the
     * same request may succeed once connected again.
     */
    public static boolean isInDoubt(Code code) {
        return code == Code.CONNECTIONLOSS
                || code == Code.OPERATIONTIMEOUT
                || code == Code.SESSIONMOVED
                || code == Code.SESSIONEXPIRED;
    }

    /**
     * A failure that may pass if the request is sent again: in doubt, or a busy server's refusal (THROTTLEDOP). See
     * {@link ClientContext#sendAgain} for when.
     */
    public static boolean isPassing(Code code) {
        return isInDoubt(code) || code == Code.THROTTLEDOP;
    }

    /** True for a failure whose cause, however wrapped, is an in-doubt {@link KeeperException}. */
    public static boolean isInDoubt(Throwable failure) {
        return cause(failure) instanceof KeeperException ke && isInDoubt(ke.code());
    }

    /** The failure under the futures' wrappers and a {@link CoordinationException} around it. */
    private static Throwable cause(Throwable failure) {
        Throwable cause = unwrap(failure);
        if (cause instanceof CoordinationException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    /**
     * True for a failure whose cause, however wrapped, is a busy server's refusal (THROTTLEDOP, from a server with
     * request throttling on): nothing was carried out, the connection is fine, and Curator does not send it again.
     */
    public static boolean isThrottled(Throwable failure) {
        return cause(failure) instanceof KeeperException ke && ke.code() == Code.THROTTLEDOP;
    }

    /** Strips the wrappers that futures add. */
    public static Throwable unwrap(Throwable error) {
        Throwable e = error;
        while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }
}
