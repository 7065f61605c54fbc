package io.coord.queue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.UUID;

/**
 * The stored form of an item, and the sizes ZooKeeper allows.
 *
 * <p>Each item znode holds an 18-byte header, then the serializer's bytes:
 *
 * <pre>
 * byte 0       'Q' (0x51), marks the header
 * byte 1       1, the format version
 * bytes 2..17  the producer token: 16 random bytes, one per offer() or putAll() call
 * bytes 18..   the serialized item
 * </pre>
 *
 * The token lets a producer whose session died in the middle of a write find out whether the write landed before
 * writing again (see QueueProducer). Data without the header, written by something else, is handed to the serializer
 * whole.
 *
 * <p>Limits come from {@code jute.maxbuffer} (default 0xfffff = 1,048,575 bytes), read in this JVM: ZooKeeper
 * refuses a request or a reply bigger than that, and a client whose reply is refused only reconnects and asks
 * again, for ever. So the queue checks before it writes.
 */
final class ItemCodec {
    static final int HEADER_BYTES = 18;
    static final int TOKEN_BYTES = 16;
    /** One name in a getChildren reply: its length prefix and {@code qn-} plus ten digits. */
    static final int BYTES_PER_NAME = 4 + Layout.ITEM_PREFIX.length() + 10;

    private static final byte MAGIC = 'Q';
    private static final byte FORMAT = 1;
    private static final int DEFAULT_MAX_BUFFER = 0xfffff;
    // Request header, the transaction's framing and the producer slot's setData, with room to spare.
    private static final int REQUEST_OVERHEAD = 1024;
    // Per create in a transaction: its header, length prefixes, flags and an allowance for the ACL.
    private static final int OP_OVERHEAD = 256;
    // A getChildren reply's header, vector length and Stat, with room to spare.
    private static final int REPLY_OVERHEAD = 1024;

    private ItemCodec() {}

    static int maxBuffer() {
        return Integer.getInteger("jute.maxbuffer", DEFAULT_MAX_BUFFER);
    }

    /** The largest capacity whose item names all fit in one getChildren reply. */
    static int maxCapacity() {
        return Math.max(0, (maxBuffer() - REPLY_OVERHEAD) / BYTES_PER_NAME);
    }

    /** What a create of one item with {@code payloadBytes} of serialized data adds to a request. */
    static long requestBytes(Layout layout, int payloadBytes) {
        return (long) OP_OVERHEAD + layout.itemPathBytes() + HEADER_BYTES + payloadBytes;
    }

    /** The most the creates of one request may add up to, leaving room for the rest of the request. */
    static long requestLimit(Layout layout) {
        return (long) maxBuffer() - REQUEST_OVERHEAD - layout.slotPathBytes();
    }

    /** The largest serialized item one request can carry. */
    static long maxItemBytes(Layout layout) {
        return requestLimit(layout) - requestBytes(layout, 0);
    }

    static byte[] newToken() {
        UUID uuid = UUID.randomUUID();
        return ByteBuffer.allocate(TOKEN_BYTES)
                .putLong(uuid.getMostSignificantBits())
                .putLong(uuid.getLeastSignificantBits())
                .array();
    }

    static byte[] encode(byte[] token, byte[] payload) {
        byte[] stored = new byte[HEADER_BYTES + payload.length];
        stored[0] = MAGIC;
        stored[1] = FORMAT;
        System.arraycopy(token, 0, stored, 2, TOKEN_BYTES);
        System.arraycopy(payload, 0, stored, HEADER_BYTES, payload.length);
        return stored;
    }

    /** The serializer's bytes of a stored item. */
    static byte[] payload(byte[] stored) {
        if (stored == null) {
            return new byte[0];
        }
        return hasHeader(stored) ? Arrays.copyOfRange(stored, HEADER_BYTES, stored.length) : stored;
    }

    static boolean carriesToken(byte[] stored, byte[] token) {
        return stored != null && hasHeader(stored) && Arrays.equals(stored, 2, 2 + TOKEN_BYTES, token, 0, TOKEN_BYTES);
    }

    private static boolean hasHeader(byte[] stored) {
        return stored.length >= HEADER_BYTES && stored[0] == MAGIC && stored[1] == FORMAT;
    }
}
