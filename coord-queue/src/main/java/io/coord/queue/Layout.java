package io.coord.queue;

import io.coord.core.SequenceNode;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.UUID;
import org.apache.curator.utils.ZKPaths;

/**
 * Where a queue keeps its znodes:
 *
 * <pre>
 * &lt;path&gt;/items/qn-&lt;seq&gt;       PERSISTENT_SEQUENTIAL, one per item, FIFO by sequence
 * &lt;path&gt;/claims/qn-&lt;seq&gt;      EPHEMERAL, same name as the item it holds
 * &lt;path&gt;/sessions/w-&lt;uuid&gt;    EPHEMERAL, a writer slot: one per concurrently writing thread of a client
 * &lt;path&gt;/sessions/s-&lt;uuid&gt;    EPHEMERAL, a session marker: one per consuming client session
 * </pre>
 *
 * The three parents are persistent. As containers they would be reaped when empty, and a reaped items parent would
 * restart its sequence at zero under consumers that still cache names from before.
 */
final class Layout {
    static final String ITEM_PREFIX = "qn-";
    private static final int SEQUENCE_DIGITS = 10;

    private final String items;
    private final String claims;
    private final String sessions;
    private final int itemPathBytes;
    private final int slotPathBytes;

    Layout(String path, String namespace) {
        this.items = ZKPaths.makePath(path, "items");
        this.claims = ZKPaths.makePath(path, "claims");
        this.sessions = ZKPaths.makePath(path, "sessions");
        // Sizes as the server sees them: with the namespace, and with the sequence the server appends.
        this.itemPathBytes = utf8Length(ZKPaths.fixForNamespace(namespace, itemPrefix())) + SEQUENCE_DIGITS;
        this.slotPathBytes = utf8Length(ZKPaths.fixForNamespace(namespace, newWriterSlot()));
    }

    String items() {
        return items;
    }

    String claims() {
        return claims;
    }

    String sessions() {
        return sessions;
    }

    /** A fresh writer slot path (see ProducerSlots). */
    String newWriterSlot() {
        return sessions + "/w-" + UUID.randomUUID();
    }

    /** A fresh session marker path (see SessionMarker). */
    String newSessionMarker() {
        return sessions + "/s-" + UUID.randomUUID();
    }

    /** The prefix a producer creates under, to which ZooKeeper appends the sequence. */
    String itemPrefix() {
        return items + "/" + ITEM_PREFIX;
    }

    String item(String name) {
        return items + "/" + name;
    }

    String claim(String name) {
        return claims + "/" + name;
    }

    int itemPathBytes() {
        return itemPathBytes;
    }

    int slotPathBytes() {
        return slotPathBytes;
    }

    /** An item name, or empty for anything else a hand outside the queue left under items. */
    static Optional<SequenceNode> parse(String name) {
        return SequenceNode.parse(name)
                .filter(n -> n.prefix().equals(ITEM_PREFIX) && n.protectionId().isEmpty());
    }

    static SequenceNode node(String name) {
        return parse(name).orElseThrow(() -> new IllegalArgumentException("not a queue item name: " + name));
    }

    private static int utf8Length(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }
}
