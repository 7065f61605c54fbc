package io.coord.bench;

/** A command line the program cannot run; {@link Main} prints the message and exits with status 2. */
public final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    public UsageException(String message) {
        super(message);
    }
}
