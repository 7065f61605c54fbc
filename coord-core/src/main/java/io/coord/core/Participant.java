package io.coord.core;

import java.util.Objects;

/**
 * One holder or waiter of a primitive.
 *
 * @param id the participant id stored as the znode's data (UTF-8); {@code __REVOKE__} once somebody asked the holder
 *     to let go, since a revocation request replaces the node's data (see {@link
 *     DistributedLock#requestRevocation})
 * @param nodeName the znode's name under the primitive's path
 * @param sequence the znode's sequence number, which orders the queue
 */
public record Participant(String id, String nodeName, long sequence) {
    public Participant {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(nodeName, "nodeName");
    }
}
