package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.Arguments;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.Deadline;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.data.Stat;

/**
 * A FIFO queue in ZooKeeper, bounded, with exactly-once ({@link #poll()}, {@link #take()}, {@link #drainTo}) and
 * at-least-once ({@link #claim(Duration)}) delivery.
 *
 * <pre>{@code
 * DistributedQueue<String> queue = DistributedQueue.builder(client, "/jobs", QueueSerializer.utf8())
 *         .capacity(1_000)
 *         .build();
 * queue.put("resize image 42");
 * String job = queue.take();
 * }</pre>
 *
 * <p>Items are PERSISTENT_SEQUENTIAL znodes under {@code <path>/items} and come out in sequence order. Each item goes
 * to exactly one of {@code poll}, {@code take}, {@code drainTo} or an acknowledged {@code claim}. A claimed item is
 * invisible to every other consumer until it is acknowledged, closed, or its claimer's session dies; a consumer on
 * another client sees it back in its place once that client hears of the release (ZooKeeper orders what one client
 * sees, not what two clients see), and until then may take the items after it. The znode layout
 * and the request protocol are described in the classes {@code Layout}, {@code Slots}, {@code QueueConsumer},
 * {@code QueueProducer} and {@code ItemCodec}.
 *
 * <p><b>Exactly once.</b> Every write that adds or removes items also sets one of the client's write slots, persistent
 * znodes under {@code <path>/slots}, at a version only that writer knows. So whatever happens to a reply or to the
 * session (a lost connection, a replay, an expiry), the writer learns for certain whether its write landed: an offer
 * that returns true wrote its item once, an item returned by {@code poll} was removed by that call alone, and an
 * {@code ack} that returns true removed the item. The slots live as long as the client, one per thread that wrote at
 * once, and are deleted when the client is closed. A process that dies without closing its client, or a client closed
 * while it cannot reach the servers, leaves its slots behind: empty znodes that nothing reads, which may be deleted
 * whenever no client of that process is running.
 *
 * <p><b>Capacity</b> counts every item in the queue, claimed ones included. A producer learns the count from the
 * sequence numbers its writes are given and reads it again only near the bound; writers racing at the bound may each
 * pass it once, so the bound can be overshot by at most one write per writing thread (untimed offers through one
 * instance that share a transaction count as one).
 *
 * <p><b>Timeouts.</b> A timed call computes its deadline once, and every wait before its first write ends there: reads,
 * creating the queue's parents, a new write slot, the watch, and waiting for a lost connection. A call whose deadline
 * passes before it has looked at the queue once (a timeout shorter than the reads it needs) then makes one look, as a
 * timed {@code poll} of a {@code BlockingQueue} and this library's timed locks do: {@code poll(Duration.ofNanos(1))}
 * takes an item that is there, and {@code offer(item, Duration.ofNanos(1))} writes to a queue with room. That look
 * waits for its answers (and a claim's for a session marker another thread is making) interruptibly, and ends with
 * nothing if the connection drops before its write is sent. No call
 * starts a write while the client is disconnected: a timed call waits for the connection until its deadline, and
 * answers false, null or empty if it did not come back (a zero timeout at once), and {@code offer(item)}, {@code
 * poll()}, {@code drainTo(sink, max)}, {@code peek()}, {@code element()}, {@code size()} and {@code isEmpty()}, which
 * never wait, throw {@link CoordinationException} (as they do when the connection drops during the call and they did
 * nothing; neither kind waits for it to come back before a write of theirs is on its way), and an untimed {@code put}
 * waits for the connection, interruptibly, before it joins a write. Once the first write is on the wire the call sees
 * it through, past the deadline if need be, so that no item is ever written or taken without the caller knowing; the
 * overrun is bounded by the retry policy and the time to reconnect. A write cut off by the client's close fails with a
 * {@link CoordinationException} that says it cannot tell whether the write landed. Any non-negative timeout is
 * accepted; one too long to count in nanoseconds, {@code ChronoUnit.FOREVER.getDuration()} included, waits for ever.
 *
 * <p>Instances are thread-safe, and all instances on one client and path share one cache of item names, one watch
 * and one set of write slots. A namespace facade ({@code client.usingNamespace(ns)}) works like any client, with the
 * znodes under the namespace. Building an instance does no I/O; ZooKeeper failures that Curator's retries cannot hide
 * surface as {@link CoordinationException}.
 */
public final class DistributedQueue<T> {
    private static final int DEFAULT_CAPACITY = 10_000;

    private final QueueSerializer<T> serializer;
    private final int capacity;
    private final SharedQueue queue;
    private final QueueProducer producer;
    private final QueueConsumer<T> consumer;

    private DistributedQueue(Builder<T> builder) {
        this.serializer = builder.serializer;
        this.capacity = builder.capacity;
        this.queue = SharedQueue.of(ClientContext.of(builder.client), builder.path);
        this.producer = new QueueProducer(queue, capacity);
        this.consumer = new QueueConsumer<>(queue, serializer);
    }

    public static <T> Builder<T> builder(CuratorFramework client, String path, QueueSerializer<T> serializer) {
        return new Builder<>(client, path, serializer);
    }

    /** Configures a queue. Nothing is checked against ZooKeeper: the builder does no I/O. */
    public static final class Builder<T> {
        private final CuratorFramework client;
        private final String path;
        private final QueueSerializer<T> serializer;
        private int capacity = Math.min(DEFAULT_CAPACITY, ItemCodec.maxCapacity());

        private Builder(CuratorFramework client, String path, QueueSerializer<T> serializer) {
            this.client = Arguments.client(client);
            this.path = Arguments.path(path);
            this.serializer = Objects.requireNonNull(serializer, "serializer must not be null");
        }

        /**
         * The most items the queue holds, claimed ones included; default 10,000. It must be
         * at least 1, and small enough that every item name fits in one getChildren reply: a consumer could not list
         * a longer queue at all. Under the default {@code jute.maxbuffer} that is about 61,000 items.
         */
        public Builder<T> capacity(int maxItems) {
            if (maxItems < 1) {
                throw new IllegalArgumentException("capacity must be >= 1: " + maxItems);
            }
            int max = ItemCodec.maxCapacity();
            if (maxItems > max) {
                throw new IllegalArgumentException("capacity must be <= " + max
                        + ", the most item names one getChildren reply can carry under jute.maxbuffer="
                        + ItemCodec.maxBuffer() + ": " + maxItems);
            }
            this.capacity = maxItems;
            return this;
        }

        public DistributedQueue<T> build() {
            return new DistributedQueue<>(this);
        }
    }

    /**
     * Adds the item if there is room; false when the queue is full. Never waits, for room or for the connection: while
     * the client is disconnected it throws {@link CoordinationException}, and nothing was written.
     */
    public boolean offer(T item) {
        List<byte[]> stored = List.of(encode(item));
        return untimed(() -> producer.write(stored, Deadline.now()), written -> !written, "offering to");
    }

    /**
     * Adds the item, waiting up to {@code timeout} for room; false if the deadline passed first and the one look it
     * then gets found no room, or the connection stayed down, and then nothing was written. If the deadline passes
     * while the write is in flight, the call waits for its outcome and returns true if the item landed (see Timeouts
     * in the class description).
     */
    public boolean offer(T item, Duration timeout) throws InterruptedException {
        Arguments.timeout(timeout);
        return producer.write(List.of(encode(item)), Deadline.after(timeout));
    }

    /** Adds the item, waiting as long as it takes for room. */
    public void put(T item) throws InterruptedException {
        producer.write(List.of(encode(item)), Deadline.forever());
    }

    /**
     * Adds all the items in one transaction, so that either all of them are in the queue, together and in order, or
     * none is. Waits for room for the whole batch. A batch that could never be written is rejected with
     * {@link IllegalArgumentException} before anything is written: one larger than the capacity, or one whose
     * transaction would exceed the request size ZooKeeper accepts ({@code jute.maxbuffer}), counting the ACL the
     * client's {@code ACLProvider} gives each item. The server's {@code jute.maxbuffer} must be no smaller than this
     * JVM's.
     */
    public void putAll(Collection<? extends T> items) throws InterruptedException {
        Objects.requireNonNull(items, "items must not be null");
        if (items.size() > capacity) {
            throw new IllegalArgumentException(
                    "a batch of " + items.size() + " items can never fit in a queue of capacity " + capacity);
        }
        List<byte[]> stored = new ArrayList<>(items.size());
        long requestBytes = 0;
        int index = 0;
        for (T item : items) {
            if (item == null) {
                throw new NullPointerException("items must not contain null: null at index " + index);
            }
            byte[] one = encode(item);
            requestBytes += ItemCodec.requestBytes(queue.layout, one.length - ItemCodec.HEADER_BYTES);
            stored.add(one);
            index++;
        }
        long limit = ItemCodec.requestLimit(queue.layout);
        if (requestBytes > limit) {
            throw new IllegalArgumentException("a batch of " + items.size() + " items needs about " + requestBytes
                    + " bytes in one request, over the " + limit + " bytes ZooKeeper accepts (jute.maxbuffer="
                    + ItemCodec.maxBuffer() + "); split it");
        }
        if (stored.isEmpty()) {
            queue.checkStarted(); // refused as any other call, though it has nothing to write
            if (queue.context.isClosed()) {
                throw ClientContext.closedError(queue.layout.items);
            }
            return;
        }
        producer.write(stored, Deadline.forever());
    }

    /**
     * Removes and returns the first item nobody holds, or null when there is none. Never waits: while the client is
     * disconnected it throws {@link CoordinationException}, and nothing was taken.
     */
    public T poll() {
        return first(untimed(() -> consumer.take(1, false, Deadline.now()), List::isEmpty, "polling"));
    }

    /**
     * Removes and returns the first item nobody holds, waiting up to {@code timeout}; null if the deadline passed
     * first (after one look at the queue while connected), and then nothing was taken. If the deadline passes while a
     * take is in flight, the call waits for its outcome and returns the item if it was taken (see Timeouts in the class
     * description).
     */
    public T poll(Duration timeout) throws InterruptedException {
        Arguments.timeout(timeout);
        return first(consumer.take(1, false, Deadline.after(timeout)));
    }

    /** Removes and returns the first item nobody holds, waiting as long as it takes. */
    public T take() throws InterruptedException {
        return first(consumer.take(1, false, Deadline.forever()));
    }

    /**
     * Removes and returns the first item nobody holds, as {@link #poll()} does.
     *
     * @throws NoSuchElementException if there is none
     */
    public T remove() {
        return present(poll());
    }

    /**
     * Moves up to {@code maxItems} items nobody holds into {@code sink}, in queue order, and returns how many. Never
     * waits, for items or for the connection: while the client is disconnected it throws
     * {@link CoordinationException}, and nothing was taken. Up to
     * {@value QueueConsumer#MAX_BATCH} small items move per round trip of two requests: one read, and one transaction
     * that removes them all. Each round's items go into the sink before the next round removes more, and a round
     * takes no more than a bounded {@link BlockingQueue} sink has room for as it starts. As with {@link
     * BlockingQueue#drainTo}, a sink that throws (one that others fill meanwhile, say) ends the call with its
     * exception: the items of that round after the one it refused are neither in the queue nor in the sink, and no
     * more are removed. If a later round fails (an
     * item the serializer cannot read, a failed request, an interrupt), the items already removed are moved and
     * counted, and the next call meets the failure; an interrupt is left set.
     *
     * @throws IllegalArgumentException if {@code maxItems} is not positive
     */
    public int drainTo(Collection<? super T> sink, int maxItems) {
        checkSink(sink, maxItems);
        return untimed(() -> consumer.drain(sink, maxItems, Deadline.now()), moved -> moved == 0, "draining");
    }

    /**
     * Moves up to {@code maxItems} items nobody holds into {@code sink}, in queue order, waiting up to
     * {@code timeout} for at least one; returns how many, 0 if the deadline passed first (after one look at the queue
     * while connected). Once some have come, it
     * moves what is there without waiting for more. A failure met after some items were removed ends the call with
     * those items, as for {@link #drainTo(Collection, int)}.
     *
     * @throws IllegalArgumentException if {@code maxItems} is not positive
     */
    public int drainTo(Collection<? super T> sink, int maxItems, Duration timeout) throws InterruptedException {
        checkSink(sink, maxItems);
        Arguments.timeout(timeout);
        return consumer.drain(sink, maxItems, Deadline.after(timeout));
    }

    /** The first item nobody holds, left in place; null when there is none. */
    public T peek() {
        return untimed(consumer::peek, Objects::isNull, "peeking at");
    }

    /**
     * The first item nobody holds, left in place, as {@link #peek()} does.
     *
     * @throws NoSuchElementException if there is none
     */
    public T element() {
        return present(peek());
    }

    private T present(T item) {
        if (item == null) {
            throw new NoSuchElementException("no item in " + queue.path + " that nobody holds");
        }
        return item;
    }

    /** Items in the queue, claimed ones included: the item parent's child count, one read. */
    public int size() {
        Stat stat = untimed(
                () -> {
                    queue.checkStarted();
                    return BackgroundRequests.awaitFully(queue.counts.next(), queue.layout.items);
                },
                counted -> false, // a count either answers or fails
                "counting the items of");
        return stat == null ? 0 : stat.getNumChildren();
    }

    /** Whether the queue holds no item at all, claimed ones included: {@code size() == 0}, one read. */
    public boolean isEmpty() {
        return size() == 0;
    }

    /**
     * Claims the first item nobody holds, waiting up to {@code timeout}: at-least-once delivery. The item stays in
     * the queue, invisible to other consumers, until the claim is acknowledged or closed, or this client's session
     * dies. Empty if the deadline passed first (after one look at the queue while connected), and then nothing was
     * claimed. If the deadline passes while a claim is
     * in flight, the call waits for its outcome and returns the claim if it was made (see Timeouts in the class
     * description).
     */
    public Optional<Claim<T>> claim(Duration timeout) throws InterruptedException {
        Arguments.timeout(timeout);
        List<QueueConsumer.Taken<T>> taken = consumer.take(1, true, Deadline.after(timeout));
        return taken.isEmpty() ? Optional.empty() : Optional.of(taken.get(0).claim());
    }

    @Override
    public String toString() {
        return "DistributedQueue[" + queue.path + ", capacity " + capacity + "]";
    }

    @FunctionalInterface
    private interface Untimed<V> {
        V call() throws InterruptedException;
    }

    /**
     * Runs a call made with {@link Deadline#now()}, which never waits interruptibly. One whose answer is {@code
     * nothing} (false, null, none) after the connection dropped or the client closed may have stopped short for that
     * alone: it throws, as it would have had that happened before, so that "nothing" only ever means the queue's state.
     */
    private <V> V untimed(Untimed<V> call, Predicate<? super V> nothing, String action) {
        CompletableFuture<Void> dropped = queue.connectionDropped();
        if (queue.started() && !queue.context.isConnected()) {
            // Nothing to wait with, and a write sent now would be waited for until the connection is back.
            throw new CoordinationException("not " + action + " " + queue.layout.items
                    + ": the client is not connected to ZooKeeper, and this call does not wait");
        }
        try {
            V answer = call.call();
            if (nothing.test(answer) && queue.context.isClosed()) {
                throw ClientContext.closedError(queue.layout.items);
            }
            if (nothing.test(answer) && (dropped.isDone() || !queue.context.isConnected())) {
                throw new CoordinationException("nothing done " + action + " " + queue.layout.items
                        + ": the connection to ZooKeeper dropped during the call, which does not wait for it");
            }
            return answer;
        } catch (InterruptedException e) {
            // Not reached: without a deadline nothing waits interruptibly. Kept honest all the same.
            Thread.currentThread().interrupt();
            throw new CoordinationException("interrupted while " + action + " " + queue.layout.items, e);
        }
    }

    private static <T> T first(List<QueueConsumer.Taken<T>> taken) {
        return taken.isEmpty() ? null : taken.get(0).item();
    }

    // Unlike a BlockingQueue, this queue is no Collection, so it can never be handed in as its own sink.
    private static void checkSink(Collection<?> sink, int maxItems) {
        Objects.requireNonNull(sink, "sink must not be null");
        if (maxItems <= 0) {
            throw new IllegalArgumentException("maxItems must be > 0: " + maxItems);
        }
    }

    /** The stored form of one item, checked against what one request can carry before anything is written. */
    private byte[] encode(T item) {
        Objects.requireNonNull(item, "item must not be null");
        byte[] payload = serializer.serialize(item);
        if (payload == null) {
            throw new NullPointerException("serializer " + serializer + " returned null for an item");
        }
        long max = ItemCodec.maxItemBytes(queue.layout);
        if (payload.length > max) {
            throw new IllegalArgumentException("item is " + payload.length + " bytes serialized, over the " + max
                    + " bytes one ZooKeeper request can carry here (jute.maxbuffer=" + ItemCodec.maxBuffer() + ")");
        }
        return ItemCodec.encode(payload);
    }
}
