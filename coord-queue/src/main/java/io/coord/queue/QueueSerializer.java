package io.coord.queue;

/**
 * Turns queue items into the bytes stored in ZooKeeper and back. The queue adds a small header of its own, which a
 * serializer never sees.
 *
 * <p>A serializer that throws loses nothing: {@code offer} and {@code put} write nothing, and a consumer whose
 * {@code deserialize} throws leaves the item where it was and passes the exception on.
 */
public interface QueueSerializer<T> {
    byte[] serialize(T item);

    T deserialize(byte[] bytes);

    /** Items that are already bytes, stored as they are. */
    static QueueSerializer<byte[]> bytes() {
        return Serializers.BYTES;
    }

    /** Strings stored as UTF-8. */
    static QueueSerializer<String> utf8() {
        return Serializers.UTF_8;
    }
}
