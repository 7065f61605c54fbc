package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;

/**
 * What one attempt has created: the name prefix of every generation it entered with, and the current generation's
 * nodes once their create answered. Guarded by the attempt's lock.
 */
final class OwnNodes {
    // Name prefixes (_c_<uuid>-) of every generation: a node carrying one is ours, current or left over.
    private final List<String> prefixes = new ArrayList<>(1);
    private List<String> names = List.of();
    private SequenceNode last; // the node the predicate places
    private long session;
    private long token;

    /**
     * Starts a generation with a fresh id, forgetting the last one's nodes (the caller deletes them first): if the
     * parent is recreated and sequences start over, no new name of ours can equal one already pruned.
     */
    String newGeneration() {
        forget();
        String prefix = prefixOf(UUID.randomUUID().toString());
        prefixes.add(prefix);
        return prefix;
    }

    /** Forgets the last generation's nodes (the caller deletes them first) before the next generation begins. */
    void forget() {
        names = List.of();
        last = null;
    }

    void created(NodeCreator.Created made) {
        names = made.names();
        String lastName = names.get(names.size() - 1);
        last = SequenceNode.parse(lastName)
                .orElseThrow(() -> new IllegalStateException("not a sequence node: " + lastName));
        session = made.session();
        token = made.token();
    }

    /** The protection id of the current generation: its names start with {@code _c_<id>-}. */
    String currentId() {
        return idOf(prefixes.get(prefixes.size() - 1));
    }

    /** The name prefix {@code _c_<id>-} of the protection id {@code id}. */
    static String prefixOf(String id) {
        return "_c_" + id + "-";
    }

    /** The protection id in a name prefix {@code _c_<id>-}. */
    static String idOf(String prefix) {
        return prefix.substring("_c_".length(), prefix.length() - 1);
    }

    /** Whether this generation's create has answered with our nodes. */
    boolean exist() {
        return last != null;
    }

    SequenceNode last() {
        return last;
    }

    long session() {
        return session;
    }

    long token() {
        return token;
    }

    List<String> names() {
        return names;
    }

    /** One of this generation's nodes: it leaves only with us. */
    boolean isCurrent(String name) {
        return names.contains(name);
    }

    /** A node under one of our ids that is not one of this generation's: a stray copy of one of our creates. */
    boolean isStray(SequenceNode node) {
        for (String prefix : prefixes) {
            if (node.name().startsWith(prefix)) {
                return !isCurrent(node.name());
            }
        }
        return false;
    }

    /** Hands this generation's names over (to a lease, or to be deleted) and forgets them. */
    List<String> take() {
        List<String> taken = names;
        names = List.of();
        return taken;
    }

    /** Every generation's prefix, as a view valid under the attempt's lock: read on every wake-up, so not copied. */
    List<String> allPrefixes() {
        return Collections.unmodifiableList(prefixes);
    }

    /** Every generation's prefix, less the current one's if {@code spareCurrent} (it may name a granted lease). */
    List<String> prefixes(boolean spareCurrent) {
        return List.copyOf(spareCurrent ? prefixes.subList(0, prefixes.size() - 1) : prefixes);
    }
}
