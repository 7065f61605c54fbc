package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.MultiRead;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeoutException;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.OpResult;

/**
 * How the consumers of one {@link DistributedQueue} read items: the stored forms of the names a round takes, with the
 * small items right after a single one read ahead for the polls that follow, and the items the serializer makes of
 * them.
 */
final class ItemReads<T> {
    /** Small items read ahead with a single poll's item. */
    static final int READ_AHEAD = 15;

    private final SharedQueue queue;
    private final QueueSerializer<T> serializer;

    ItemReads(SharedQueue queue, QueueSerializer<T> serializer) {
        this.queue = queue;
        this.serializer = serializer;
    }

    /**
     * The stored forms of a round's names, null for those gone, up to the first that this client may not read, whose
     * failure {@link #of} throws for it and every name after it.
     */
    record Stored(List<byte[]> forms, CoordinationException unreadable) {
        byte[] of(int index) {
            if (index >= forms.size()) {
                throw unreadable;
            }
            return forms.get(index);
        }
    }

    /**
     * The stored forms of the taken names, null for those gone: from what was read ahead, else one multi-read. A
     * single name is read together with up to {@value #READ_AHEAD} small candidates after it, kept for the polls
     * that follow, so that a run of polls costs about one write per item.
     */
    Stored read(List<String> names, Deadline deadline, boolean waitsForConnection)
            throws InterruptedException, TimeoutException {
        NameCache cache = queue.items.names();
        List<byte[]> stored = new ArrayList<>(names.size());
        List<String> reading = new ArrayList<>();
        for (String name : names) {
            byte[] known = cache.takeData(name);
            stored.add(known);
            if (known == null) {
                reading.add(name);
            }
        }
        if (reading.isEmpty()) {
            return new Stored(stored, null);
        }
        List<String> ahead = names.size() == 1 && Layout.isSmall(names.get(0))
                ? cache.readAhead(names.get(0), Math.min(READ_AHEAD, ItemCodec.smallItemsPerRead() - 1))
                : List.of();
        reading.addAll(ahead);
        long epoch = cache.epoch();
        // A read lost with the connection is sent again once connected, unless the call does not wait for it.
        List<OpResult> results = BackgroundRequests.awaitWithin(
                MultiRead.read(
                        queue.context, reading.stream().map(queue.layout::item).toList(), waitsForConnection),
                deadline,
                queue.layout.items);
        int next = 0;
        CoordinationException unreadable = null;
        for (int i = 0; i < names.size() && unreadable == null; i++) {
            if (stored.get(i) == null) {
                try {
                    stored.set(i, data(results.get(next++), queue.layout.item(names.get(i))));
                } catch (CoordinationException e) {
                    unreadable = e; // this client may not read it: what comes after it waits
                    stored.subList(i, stored.size()).clear();
                }
            }
        }
        next = reading.size() - ahead.size();
        for (String name : ahead) {
            byte[] one;
            try {
                one = data(results.get(next++), queue.layout.item(name));
            } catch (CoordinationException e) {
                continue; // only read ahead: it fails the call that takes it
            }
            if (one == null) {
                cache.gone(name);
            } else {
                cache.keepData(name, one, epoch);
            }
        }
        return new Stored(stored, unreadable);
    }

    /**
     * An item from its stored form; a serializer that answers null fails it as one that throws does. What the
     * serializer throws is thrown as it is, with the item's path attached (suppressed), so that an operator can find
     * the item that holds up the queue and take it with {@link QueueSerializer#bytes()}.
     */
    T decode(String name, byte[] stored) {
        T item;
        try {
            item = serializer.deserialize(ItemCodec.payload(stored));
        } catch (RuntimeException | Error e) {
            if (Arrays.stream(e.getSuppressed()).noneMatch(CoordinationException.class::isInstance)) {
                // Once: a serializer may throw one shared instance every time.
                e.addSuppressed(new CoordinationException("serializer " + serializer + " cannot read the item "
                        + queue.layout.item(name) + ", which stays in place at the head of the queue"));
            }
            throw e;
        }
        if (item == null) {
            throw new NullPointerException(
                    "serializer " + serializer + " returned null for the item " + queue.layout.item(name));
        }
        return item;
    }

    /**
     * Whether a read of an item's claim found it: a claim that this client may not read (its claimer's ACL) exists as
     * well, since a missing znode answers NONODE whatever the ACL.
     */
    static boolean claimed(OpResult result, String path) {
        return result instanceof OpResult.ErrorResult error && Code.get(error.getErr()) == Code.NOAUTH
                || data(result, path) != null;
    }

    /** A read's data, or null if the znode does not exist. */
    static byte[] data(OpResult result, String path) {
        if (result instanceof OpResult.GetDataResult read) {
            return read.getData() == null ? new byte[0] : read.getData();
        }
        Code code = Code.get(((OpResult.ErrorResult) result).getErr());
        if (code == Code.NONODE) {
            return null;
        }
        throw BackgroundRequests.failure("reading", path, code);
    }
}
