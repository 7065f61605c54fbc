package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.Arguments;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.Deadline;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.data.Stat;

/**
 * A FIFO queue in ZooKeeper, bounded, with at-most-once ({@link #poll()}, {@link #take()}) and at-least-once
 * ({@link #claim(Duration)}) delivery.
 *
 * <pre>{@code
 * DistributedQueue<String> queue = DistributedQueue.builder(client, "/jobs", QueueSerializer.utf8())
 *         .capacity(1_000)
 *         .build();
 * queue.put("resize image 42");
 * String job = queue.take();
 * }</pre>
 *
 * <p>Items are PERSISTENT_SEQUENTIAL znodes {@code <path>/items/qn-<seq>} and come out in sequence order. Each item
 * goes to exactly one of {@code poll}, {@code take} or an acknowledged {@code claim}. A claimed item is invisible to
 * every other consumer until it is acknowledged, closed, or its claimer's session dies. The znode layout and the
 * request protocol are described in the classes {@code Layout}, {@code ClaimOps}, {@code QueueProducer} and
 * {@code ItemCodec}.
 *
 * <p>{@code capacity} counts every item in the queue, claimed ones included, as the item parent's child count. A
 * producer reads the count, then writes; producers that race may each pass the check, so the bound can be
 * overshot by at most the number of writes racing at that moment.
 *
 * <p><b>Timeouts.</b> A timed call ({@code offer}, {@code poll} or {@code claim} with a {@link Duration}) computes
 * its deadline once, and every wait before its first write ends there: reads (the producer's count, the consumer's
 * children list), creating the queue's parents, watches, and waiting for a lost connection. No write is sent while
 * the client is disconnected. Once the first write is on the wire (the producer's transaction that creates the item,
 * or the consumer's claim of one item) the call sees it through, past the deadline if need be, so that no item is
 * ever written or taken without the caller knowing: Curator retries it under the client's retry policy, then it is
 * sent again after each reconnection as long as the session that sent it lives; if that session ends, a producer
 * reads the queue to learn whether its item landed, and a consumer's claim died with the session. The overrun is so
 * bounded by the retry policy and the session timeout. Any non-negative timeout is accepted; one too long to count
 * in nanoseconds, {@code ChronoUnit.FOREVER.getDuration()} included, waits for ever.
 *
 * <p>Instances are thread-safe, and all instances on one client and path share one cache of item names and one
 * watch. A namespace facade ({@code client.usingNamespace(ns)}) works like any client, with the znodes under the
 * namespace. Building an instance does no I/O; ZooKeeper failures that Curator's retries cannot hide surface as
 * {@link CoordinationException}.
 */
public final class DistributedQueue<T> {
    private static final int DEFAULT_CAPACITY = 10_000;

    private final String path;
    private final QueueSerializer<T> serializer;
    private final int capacity;
    private final SharedQueue queue;
    private final QueueProducer producer;
    private final QueueConsumer<T> consumer;

    private DistributedQueue(Builder<T> builder) {
        this.path = builder.path;
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

    /** Adds the item if there is room; false when the queue is full. Never waits for room. */
    public boolean offer(T item) {
        byte[] token = ItemCodec.newToken();
        List<byte[]> stored = List.of(encode(item, token));
        try {
            return producer.write(stored, token, Deadline.now());
        } catch (InterruptedException e) {
            // Not reached: without a deadline nothing waits interruptibly. Kept honest all the same.
            Thread.currentThread().interrupt();
            throw new CoordinationException("interrupted while offering to " + queue.layout.items(), e);
        }
    }

    /**
     * Adds the item, waiting up to {@code timeout} for room; false if the deadline passed first, whether the queue
     * stayed full or the connection stayed down, and then nothing was written. If the deadline passes while the write
     * is in flight, the call waits for its outcome and returns true if the item landed (see Timeouts in the class
     * description).
     */
    public boolean offer(T item, Duration timeout) throws InterruptedException {
        Arguments.timeout(timeout);
        byte[] token = ItemCodec.newToken();
        return producer.write(List.of(encode(item, token)), token, Deadline.after(timeout));
    }

    /** Adds the item, waiting as long as it takes for room. */
    public void put(T item) throws InterruptedException {
        byte[] token = ItemCodec.newToken();
        producer.write(List.of(encode(item, token)), token, Deadline.forever());
    }

    /**
     * Adds all the items in one transaction, so that either all of them are in the queue, together and in order, or
     * none is. Waits for room for the whole batch. A batch that could never be written is rejected with
     * {@link IllegalArgumentException} before anything is written: one larger than the capacity, or one whose
     * transaction would exceed the request size ZooKeeper accepts ({@code jute.maxbuffer}).
     */
    public void putAll(Collection<? extends T> items) throws InterruptedException {
        Objects.requireNonNull(items, "items must not be null");
        if (items.size() > capacity) {
            throw new IllegalArgumentException(
                    "a batch of " + items.size() + " items can never fit in a queue of capacity " + capacity);
        }
        byte[] token = ItemCodec.newToken();
        List<byte[]> stored = new ArrayList<>(items.size());
        long requestBytes = 0;
        int index = 0;
        for (T item : items) {
            if (item == null) {
                throw new NullPointerException("items must not contain null: null at index " + index);
            }
            byte[] one = encode(item, token);
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
        if (!stored.isEmpty()) {
            producer.write(stored, token, Deadline.forever());
        }
    }

    /** Removes and returns the first item nobody holds, or null when there is none. Never waits. */
    public T poll() {
        try {
            return item(consumer.consume(false, Deadline.now()));
        } catch (InterruptedException e) {
            // Not reached: without a deadline nothing waits interruptibly.
            Thread.currentThread().interrupt();
            throw new CoordinationException("interrupted while polling " + queue.layout.items(), e);
        }
    }

    /**
     * Removes and returns the first item nobody holds, waiting up to {@code timeout}; null if the deadline passed
     * first, and then nothing was taken. If the deadline passes while a take is in flight, the call waits for its
     * outcome and returns the item if it was taken (see Timeouts in the class description).
     */
    public T poll(Duration timeout) throws InterruptedException {
        Arguments.timeout(timeout);
        return item(consumer.consume(false, Deadline.after(timeout)));
    }

    /** Removes and returns the first item nobody holds, waiting as long as it takes. */
    public T take() throws InterruptedException {
        return item(consumer.consume(false, Deadline.forever()));
    }

    /** The first item nobody holds, left in place; null when there is none. */
    public T peek() {
        return consumer.peek();
    }

    /** Items in the queue, claimed ones included: the item parent's child count, one read. */
    public int size() {
        Stat stat = Requests.awaitFully(queue.counts.next(), queue.layout.items());
        return stat == null ? 0 : stat.getNumChildren();
    }

    /**
     * Claims the first item nobody holds, waiting up to {@code timeout}: at-least-once delivery. The item stays in
     * the queue, invisible to other consumers, until the claim is acknowledged or closed, or this client's session
     * dies. Empty if the deadline passed first, and then nothing was claimed. If the deadline passes while a claim is
     * in flight, the call waits for its outcome and returns the claim if it was made (see Timeouts in the class
     * description).
     */
    public Optional<Claim<T>> claim(Duration timeout) throws InterruptedException {
        Arguments.timeout(timeout);
        QueueConsumer.Taken<T> taken = consumer.consume(true, Deadline.after(timeout));
        return taken == null ? Optional.empty() : Optional.of(taken.claim());
    }

    @Override
    public String toString() {
        return "DistributedQueue[" + path + ", capacity " + capacity + "]";
    }

    private static <T> T item(QueueConsumer.Taken<T> taken) {
        return taken == null ? null : taken.item();
    }

    /** The stored form of one item, checked against what one request can carry before anything is written. */
    private byte[] encode(T item, byte[] token) {
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
        return ItemCodec.encode(token, payload);
    }
}
