package io.coord.queue;

import io.coord.core.internal.MultiRead;
import java.util.Arrays;

/**
 * The stored form of an item, and the sizes ZooKeeper allows.
 *
 * <p>Each item znode holds a 2-byte header, {@code 'Q'} (0x51) then the format version 2, then the serializer's
 * bytes. Items of format 1 (an 18-byte header: {@code 'Q'}, 1, a 16-byte token) are still read. Data without a
 * header, written by something else, is handed to the serializer whole.
 *
 * <p>Limits come from {@code jute.maxbuffer} (default 0xfffff = 1,048,575 bytes), read in this JVM: ZooKeeper
 * refuses a request or a reply bigger than that, and a client whose reply is refused only reconnects and asks
 * again, for ever. So the queue checks before it writes, and reads many items in one request only when it knows
 * their replies fit: items whose stored form is at most {@link #SMALL_ITEM_BYTES} are named {@code qs-} (see
 * Layout).
 */
final class ItemCodec {
    static final int HEADER_BYTES = 2;
    /** The largest stored form named as small. */
    static final int SMALL_ITEM_BYTES = 4096;
    /** One name in a getChildren reply: its length prefix and {@code qn-} plus ten digits. */
    static final int BYTES_PER_NAME = 4 + Layout.ITEM_PREFIX.length() + 10;

    private static final byte MAGIC = 'Q';
    private static final byte FORMAT = 2;
    private static final byte TOKEN_FORMAT = 1;
    private static final int TOKEN_HEADER_BYTES = 18;
    // Request header, the transaction's framing and the slot's setData, with room to spare.
    private static final int REQUEST_OVERHEAD = 1024;
    // Per create in a transaction: its header, length prefixes, flags and an allowance for the ACL.
    private static final int OP_OVERHEAD = 256;
    // The part of that allowance an ACL may take; a larger one is counted on top (the open ACL takes 27 bytes).
    private static final int ACL_ALLOWANCE = 64;
    // A reply's header, vector length and Stat, with room to spare.
    private static final int REPLY_OVERHEAD = 1024;

    private ItemCodec() {}

    static int maxBuffer() {
        return MultiRead.maxBuffer();
    }

    /** The largest capacity whose item names all fit in one getChildren reply. */
    static int maxCapacity() {
        return Math.max(0, (maxBuffer() - REPLY_OVERHEAD) / BYTES_PER_NAME);
    }

    /** How many small items one multi-read reply can carry, whatever their sizes. */
    static int smallItemsPerRead() {
        return MultiRead.readsPerReply(SMALL_ITEM_BYTES);
    }

    /** What a create of one item with {@code payloadBytes} of serialized data adds to a request. */
    static long requestBytes(Layout layout, int payloadBytes) {
        return (long) OP_OVERHEAD
                + Math.max(0, layout.aclBytes() - ACL_ALLOWANCE)
                + layout.itemPathBytes
                + HEADER_BYTES
                + payloadBytes;
    }

    /** The most the creates of one request may add up to, leaving room for the rest of the request. */
    static long requestLimit(Layout layout) {
        return (long) maxBuffer() - REQUEST_OVERHEAD - layout.slotPathBytes;
    }

    /** The largest serialized item one request can carry. */
    static long maxItemBytes(Layout layout) {
        return requestLimit(layout) - requestBytes(layout, 0);
    }

    static byte[] encode(byte[] payload) {
        byte[] stored = new byte[HEADER_BYTES + payload.length];
        stored[0] = MAGIC;
        stored[1] = FORMAT;
        System.arraycopy(payload, 0, stored, HEADER_BYTES, payload.length);
        return stored;
    }

    static boolean isSmall(byte[] stored) {
        return stored.length <= SMALL_ITEM_BYTES;
    }

    /** The serializer's bytes of a stored item. */
    static byte[] payload(byte[] stored) {
        if (stored == null) {
            return new byte[0];
        }
        if (stored.length >= HEADER_BYTES && stored[0] == MAGIC && stored[1] == FORMAT) {
            return Arrays.copyOfRange(stored, HEADER_BYTES, stored.length);
        }
        if (stored.length >= TOKEN_HEADER_BYTES && stored[0] == MAGIC && stored[1] == TOKEN_FORMAT) {
            return Arrays.copyOfRange(stored, TOKEN_HEADER_BYTES, stored.length);
        }
        return stored;
    }
}
