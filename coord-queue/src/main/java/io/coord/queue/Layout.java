package io.coord.queue;

import io.coord.core.SequenceNode;
import io.coord.core.internal.TransactionOps;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.UUID;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;

/**
 * Where a queue keeps its znodes:
 *
 * <pre>
 * &lt;path&gt;/items/qs-&lt;seq&gt;       PERSISTENT_SEQUENTIAL, an item whose stored form is small (see ItemCodec)
 * &lt;path&gt;/items/qn-&lt;seq&gt;       PERSISTENT_SEQUENTIAL, an item of any size
 * &lt;path&gt;/claims/&lt;item&gt;       EPHEMERAL, same name as the item it holds
 * &lt;path&gt;/slots/&lt;uuid&gt;        PERSISTENT, a write slot: one per thread of a client writing at once (see Slots)
 * &lt;path&gt;/sessions/s-&lt;uuid&gt;    EPHEMERAL, a session marker: one per claiming client session (see SessionMarker)
 * </pre>
 *
 * Items come out in sequence order whatever their prefix: one parent numbers them all. The size class in the name
 * lets a consumer read many small items in one request without ever asking for a reply larger than the client
 * accepts. The four parents are persistent. As containers they would be reaped when empty, and a reaped items parent
 * would restart its sequence at zero under consumers that still cache names from before.
 */
final class Layout {
    static final String ITEM_PREFIX = "qn-";
    static final String SMALL_ITEM_PREFIX = "qs-";
    private static final int SEQUENCE_DIGITS = 10;
    // The open ACL as a request carries it: the list's length, then world:anyone's permissions, scheme and id.
    private static final int OPEN_ACL_BYTES = 4 + 4 + (4 + "world".length()) + (4 + "anyone".length());

    // The parents, and what an item's and a slot's paths take as the server sees them.
    final String items;
    final String claims;
    final String slots;
    final String sessions;
    final int itemPathBytes;
    final int slotPathBytes;
    private final CuratorFramework client; // null: creates carry the open ACL
    private volatile int aclBytes = -1; // measured on first use, once the client is started

    /** The layout under {@code path} for a client whose item creates carry the open ACL. */
    Layout(String path, String namespace) {
        this(path, namespace, null);
    }

    /** The layout under {@code path} for {@code client}, whose ACL provider says what each item create carries. */
    Layout(String path, CuratorFramework client) {
        this(path, client.getNamespace(), client);
    }

    private Layout(String path, String namespace, CuratorFramework client) {
        this.items = ZKPaths.makePath(path, "items");
        this.claims = ZKPaths.makePath(path, "claims");
        this.slots = ZKPaths.makePath(path, "slots");
        this.sessions = ZKPaths.makePath(path, "sessions");
        // Sizes as the server sees them: with the namespace, and with the sequence the server appends.
        this.itemPathBytes = utf8Length(ZKPaths.fixForNamespace(namespace, itemPrefix(false))) + SEQUENCE_DIGITS;
        this.slotPathBytes = utf8Length(ZKPaths.fixForNamespace(namespace, newSlot()));
        this.client = client;
    }

    /**
     * What the ACL takes in an item create of {@code client}: the create is built as every item create is, which puts
     * the provider's ACL for the path in it, and measured as it would be sent, less its path, its empty data and its
     * flags.
     */
    private static int itemAclBytes(CuratorFramework client, String prefix) {
        CuratorOp create = TransactionOps.create(client, prefix, CreateMode.PERSISTENT_SEQUENTIAL, new byte[0]);
        return TransactionOps.requestBytes(create)
                - TransactionOps.OP_HEADER_BYTES
                - (4 + utf8Length(create.get().getPath()))
                - 4
                - 4;
    }

    /** Every parent, created on first use and never deleted by the queue. */
    String[] parents() {
        return new String[] {items, claims, slots, sessions};
    }

    String newSlot() {
        return slots + "/" + UUID.randomUUID();
    }

    String newSessionMarker() {
        return sessions + "/s-" + UUID.randomUUID();
    }

    /** The prefix a producer creates under, to which ZooKeeper appends the sequence. */
    String itemPrefix(boolean small) {
        return items + "/" + (small ? SMALL_ITEM_PREFIX : ITEM_PREFIX);
    }

    String item(String name) {
        return items + "/" + name;
    }

    String claim(String name) {
        return claims + "/" + name;
    }

    /**
     * What the ACL adds to each item create, measured on a started client (one never started cannot build a create,
     * and a queue call on it is refused first); the open ACL stands in until then.
     */
    int aclBytes() {
        int known = aclBytes;
        if (known >= 0) {
            return known;
        }
        if (client == null || client.getState() != CuratorFrameworkState.STARTED) {
            return OPEN_ACL_BYTES;
        }
        try {
            known = itemAclBytes(client, itemPrefix(false));
        } catch (IllegalStateException e) {
            return OPEN_ACL_BYTES; // closed since: the call fails further on, as on any closed client
        }
        aclBytes = known;
        return known;
    }

    /** An item name, or empty for anything else a hand outside the queue left under items. */
    static Optional<SequenceNode> parse(String name) {
        return SequenceNode.parse(name)
                .filter(n -> (n.prefix().equals(ITEM_PREFIX) || n.prefix().equals(SMALL_ITEM_PREFIX))
                        && n.protectionId().isEmpty());
    }

    static SequenceNode node(String name) {
        return parse(name).orElseThrow(() -> new IllegalArgumentException("not a queue item name: " + name));
    }

    /** Whether the item's stored form is known to be small, so that many fit in one reply. */
    static boolean isSmall(String name) {
        return name.startsWith(SMALL_ITEM_PREFIX);
    }

    private static int utf8Length(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }
}
