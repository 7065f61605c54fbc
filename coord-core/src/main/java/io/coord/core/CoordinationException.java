package io.coord.core;

/** A ZooKeeper failure that retries could not hide, such as a closed client or missing permissions. */
public class CoordinationException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public CoordinationException(String message) {
        super(message);
    }

    public CoordinationException(String message, Throwable cause) {
        super(message, cause);
    }
}
