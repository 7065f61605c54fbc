package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;

/**
 * The herd bound of one client's view of one path. Every event goes to every client with a view of the path, so with
 * N clients contending a round costs O(N²) notifications: a client keeps its view only while the path holds at most
 * {@link ViewSettings#maxOthers} nodes besides its own (its own include those whose creates have not answered yet),
 * and falls back to predecessor watches above it, until {@link #QUIET_READS} reads in a row find the path back at
 * half the bound, however long the client leaves the path alone in between (up to {@link #CROWDED_MEMORY}). The count
 * is checked when the client's own nodes join the view and at every create event, so an idle view that a burst
 * crowds is dropped at once instead of hearing the whole burst. Nor does a client add a view to a path it has not
 * counted yet: its first acquisition there queues with predecessor watches, and that read is the count.
 *
 * <p>Guarded by the view's lock.
 */
final class HerdBound {
    /** Reads in a row that must find a crowded path quiet before its view is used again. */
    static final int QUIET_READS = 4;

    /**
     * How long, at least, an unused view that was crowded keeps its verdict, whatever the linger. Remembering costs
     * the servers nothing (a crowded view has no watch) and only delays a view on a path that turned quiet; forgetting
     * sends each client that finds the path empty at the start of the next burst to add a view that hears the whole
     * burst until it is crowded again.
     */
    static final Duration CROWDED_MEMORY = Duration.ofMinutes(1);

    /** What a count outside the view means for the view. */
    enum Count {
        /** Past the bound: the view becomes unusable. */
        CROWDED,
        /** Quiet for long enough: a crowded view may be used again. */
        QUIET,
        UNCHANGED
    }

    private final Set<String> own = new HashSet<>(); // nodes of this client in the view
    // Protection ids of this client's creates not answered yet: their create events come before their replies.
    private final Set<String> entering = new HashSet<>();
    private boolean counted; // a read has counted the path's nodes: until then, attempts do without the view
    private int quietReads; // reads in a row, while crowded, that found at most half the bound

    boolean counted() {
        return counted;
    }

    /** A create of this client named with {@code _c_<id>-} is on its way: its nodes are not another session's. */
    void entering(String id) {
        entering.add(id);
    }

    /** The create named with {@code id} answered, or its attempt stopped waiting on the view. */
    void entered(String id) {
        entering.remove(id);
    }

    /** Records those of {@code names} that the view holds as this client's, and as readable. */
    void own(Collection<String> names, ViewNodes nodes) {
        for (String name : names) {
            SequenceNode node = SequenceNode.parse(name).orElseThrow();
            node.protectionId().ifPresent(entering::remove);
            if (nodes.contains(node)) {
                own.add(name);
                nodes.confirm(name);
            }
        }
    }

    void forget(String name) {
        own.remove(name);
    }

    /** A read replaced the view's nodes: ours that it did not list are gone, and the others are readable. */
    void read(ViewNodes nodes) {
        own.removeIf(name -> !nodes.contains(SequenceNode.parse(name).orElseThrow()));
        own.forEach(nodes::confirm);
        counted = true;
    }

    /** Whether the view holds more nodes of other sessions than {@code bound}. */
    boolean crowded(ViewNodes nodes, int bound) {
        int others = nodes.size() - own.size();
        for (String id : entering) {
            others -= nodes.countWithId(id);
        }
        return others > bound;
    }

    /**
     * A read outside the view (predecessor-watch mode) found {@code others} nodes of other sessions. The first such
     * count decides whether the path may have a view; a crowded view becomes usable again only after
     * {@link #QUIET_READS} reads in a row find at most half the bound, so that a queue that empties now and then does
     * not bring every client's view back at once.
     */
    Count countedOthers(int others, int bound, PathView.Unusable unusable) {
        counted = true;
        if (unusable == null) {
            return others > bound ? Count.CROWDED : Count.UNCHANGED;
        }
        if (unusable != PathView.Unusable.CROWDED) {
            return Count.UNCHANGED;
        }
        quietReads = others <= bound / 2 ? quietReads + 1 : 0;
        if (quietReads < QUIET_READS) {
            return Count.UNCHANGED;
        }
        quietReads = 0;
        return Count.QUIET;
    }

    /** The view became unusable: quiet reads count from zero. */
    void restartQuietCount() {
        quietReads = 0;
    }
}
