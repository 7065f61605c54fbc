package io.coord.queue;

import io.coord.core.CoordinationException;

/** The client was closed under a pending request; {@link Zk#failure} names the path once it is known. */
final class ClientClosedException extends CoordinationException {
    private static final long serialVersionUID = 1L;

    ClientClosedException(String path) {
        super("the client was closed while a request on " + path + " was pending");
    }
}
