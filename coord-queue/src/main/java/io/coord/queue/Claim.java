package io.coord.queue;

/**
 * An item taken with at-least-once delivery: while the claim is held, no other consumer sees the item. Use it in
 * try-with-resources, and {@link #ack()} once the item has been handled:
 *
 * <pre>{@code
 * try (Claim<String> claim = queue.claim(Duration.ofSeconds(5)).orElseThrow()) {
 *     handle(claim.item());
 *     claim.ack();
 * }
 * }</pre>
 *
 * <p>If the claimer's ZooKeeper session dies before the ack, the claim dies with it and another consumer gets the
 * item. That consumer may then handle an item this one had handled too: that is the "at least" in at-least-once.
 * The ack itself is exact: it returns true when, and only when, it removed the item.
 *
 * <p>A claim is a hold, but not a {@code Lease}: it can end acknowledged as well as released or lost, it orders
 * nothing (there is no fencing token to give), and it has no SUSPECT state a holder could act on, since an item
 * handled during a suspension is acknowledged or redelivered all the same.
 */
public interface Claim<T> extends AutoCloseable {
    T item();

    /**
     * Removes the item for good. Returns false if the claim was no longer ours: it was closed, or our session ended
     * since the claim was made, so the item may have gone to another consumer. A true answer means this call removed
     * the item, even if its reply was lost on the way. Calling it again after a successful ack returns true. Do not
     * call it in a {@code ConnectionStateListener}: an ack whose reply is lost waits for the connection to come back,
     * which Curator tells on that listener's thread.
     *
     * @throws io.coord.core.CoordinationException if ZooKeeper refused the removal (a permission, say) while the
     *     claim is still ours: it stays held, to be acknowledged again or closed
     * @throws IllegalStateException if called on ZooKeeper's event thread (in a watcher or a background callback)
     *     while the claim is held, since that thread must deliver the answer the ack would wait for; nothing is sent
     */
    boolean ack();

    /**
     * Without an ack, gives the item back: it becomes available again in its original place at the head of the
     * queue. Idempotent, and a no-op after {@link #ack()}. Returns once the release has been answered, so that a
     * poll of this client right after it finds the item; while the client is disconnected it returns at once, and the
     * release goes out when the connection is back. So it does too when the session's marker node was deleted by
     * something other than the queue, and must be made again before the release can be sent, and when called on
     * ZooKeeper's event thread (in a watcher or a background callback), which must deliver the answer it would wait
     * for. If an {@code ack()} of another thread is under way, it returns at once too, and the close is decided after
     * the ack (nothing is left to do if the ack removed the item).
     */
    @Override
    void close();
}
