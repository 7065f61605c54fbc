package io.coord.queue;

import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;

/**
 * The item names the consumers of one path in one client know of, each in one {@link State}. Candidates are handed
 * out in sequence order, each to one local consumer at a time.
 *
 * <pre>
 * (listed) --&gt; CANDIDATE -- taken --&gt; TAKEN -- put back --&gt; CANDIDATE
 * TAKEN, CANDIDATE -- another client's claim seen --&gt; WATCHED -- claim deleted, or our session ended --&gt; CANDIDATE
 * TAKEN -- claimed here --&gt; HELD -- released --&gt; CANDIDATE
 * HELD -- its session ended --&gt; CANDIDATE
 * any -- the item is gone --&gt; GONE -- a read no longer lists it --&gt; (forgotten)
 * </pre>
 *
 * A children read never brings back a name that is out of play: GONE is remembered until a read no longer lists the
 * name, so that a read sent before the item went cannot bring it back; one sent after that still lists it finds an
 * item made since under the same name (the queue was reset by hand), which comes into play. Our claims are kept by
 * name and session, as the server keeps them: a claim is ours only while the session that made it lives, and news of
 * an ended session's claim never speaks for a newer claim on the same item.
 */
final class NameCache {
    private enum State {
        /** In play: the next consumer to look may take it. */
        CANDIDATE,
        /** A local consumer is trying to take or claim it. */
        TAKEN,
        /** Another client's claim holds it; the watch on that claim brings it back. */
        WATCHED,
        /** A claim of ours, made on {@code session}, holds it. */
        HELD,
        /** The item is gone. */
        GONE
    }

    private static final class Entry {
        State state;
        long session;
        /** When GONE: the children reads sent by then, none of which can speak for an item made since. */
        long goneAfterRead;
        /** The item's stored form, read ahead of its turn; kept only while the name is in play or taken. */
        byte[] data;

        Entry(State state) {
            this.state = state;
        }
    }

    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock. candidates indexes the CANDIDATE entries in sequence order, and move() alone writes it.
    private final Map<String, Entry> entries = new HashMap<>();
    private final TreeSet<SequenceNode> candidates = new TreeSet<>();
    private long readsSent;
    // Bumped by every reset: data read ahead before one says nothing of the items after it.
    private long epoch;

    /** Counts a children read about to be sent; its listing goes to {@link #merge} with the number returned. */
    long readSent() {
        return Locked.get(lock, () -> ++readsSent);
    }

    /** What {@link #keepData} needs of a read ahead: taken before the read is sent. */
    long epoch() {
        return Locked.get(lock, () -> epoch);
    }

    /**
     * Hands out up to {@code max} names from the head, in order, until handed back or settled: a run of small items
     * up to {@code smallPerRead}, or one item of any size. Empty when no candidate is cached.
     */
    List<String> take(int max, int smallPerRead) {
        return Locked.get(lock, () -> {
            List<String> taken = new ArrayList<>();
            for (SequenceNode node : candidates) {
                boolean small = Layout.isSmall(node.name());
                if (!taken.isEmpty() && (!small || taken.size() >= Math.min(max, smallPerRead))) {
                    break;
                }
                taken.add(node.name());
                if (!small) {
                    break;
                }
            }
            taken.forEach(name -> move(name, State.TAKEN));
            return taken;
        });
    }

    /** The stored form read ahead for a taken name, or null; handed out once. */
    byte[] takeData(String name) {
        return Locked.get(lock, () -> {
            Entry entry = entries.get(name);
            byte[] data = entry == null || entry.state != State.TAKEN ? null : entry.data;
            if (data != null) {
                entry.data = null;
            }
            return data;
        });
    }

    /** Up to {@code max} small candidates right after {@code name}, in order, whose data is not read yet. */
    List<String> readAhead(String name, int max) {
        return Locked.get(lock, () -> {
            List<String> ahead = new ArrayList<>();
            for (SequenceNode node : candidates.tailSet(Layout.node(name), false)) {
                if (ahead.size() >= max || !Layout.isSmall(node.name()) || entries.get(node.name()).data != null) {
                    break;
                }
                ahead.add(node.name());
            }
            return ahead;
        });
    }

    /** Keeps the stored form of a name read ahead, while it is still a candidate and no reset came since the read. */
    void keepData(String name, byte[] data, long readAtEpoch) {
        Locked.run(lock, () -> {
            Entry entry = entries.get(name);
            if (entry != null && entry.state == State.CANDIDATE && readAtEpoch == epoch) {
                entry.data = data;
            }
        });
    }

    /** The first candidate, left in place (for peek). */
    String head() {
        return Locked.get(
                lock, () -> candidates.isEmpty() ? null : candidates.first().name());
    }

    /** A taken name goes back into play, at its place in the order. Returns true if it came back. */
    boolean putBack(String name) {
        return transition(name, State.TAKEN, State.CANDIDATE);
    }

    /** The item is gone, taken here or elsewhere. */
    void gone(String name) {
        Locked.run(lock, () -> move(name, State.GONE));
    }

    /** Holds a name out before asking, with a watch, whether another client's claim holds it. */
    void watch(String name) {
        Locked.run(lock, () -> {
            Entry entry = entries.get(name);
            if (entry == null || entry.state == State.CANDIDATE || entry.state == State.TAKEN) {
                move(name, State.WATCHED);
            }
        });
    }

    /** The watched claim is gone, or was never there. Returns true if the name came back into play. */
    boolean claimDeleted(String name) {
        return transition(name, State.WATCHED, State.CANDIDATE);
    }

    /** A claim of ours, made on {@code session}, holds the name. */
    void held(String name, long session) {
        Locked.run(lock, () -> move(name, State.HELD).session = session);
    }

    /** Our claim made on {@code session} was deleted: the name is back in play. Returns true if it came back. */
    boolean released(String name, long session) {
        return endHold(name, session, State.CANDIDATE);
    }

    /** Our claim made on {@code session} was acknowledged: the item is gone. */
    void acked(String name, long session) {
        endHold(name, session, State.GONE);
    }

    /**
     * The queue was reset by hand (a read found the items parent made again, or a write found a parent or a write slot
     * missing), and the items numbered from zero again: the names known before say nothing of the new items. Only those
     * a local consumer holds are kept, and no data read ahead, not even by a read still in flight.
     */
    void reset() {
        Locked.run(lock, () -> {
            epoch++;
            entries.values().forEach(entry -> entry.data = null);
            forgetUnheld(name -> true);
        });
    }

    /**
     * Merges the listing of children read number {@code read} (see {@link #readSent}). Returns true if a name came into
     * play. Listed names this cache does not hold out come into play, and so do those of our claims that died with an
     * earlier session, and those that went before the read was sent; names it no longer lists are forgotten, unless a
     * local consumer holds them.
     */
    boolean merge(List<String> children, long currentSession, long read) {
        Set<String> listed = new HashSet<>();
        for (String child : children) {
            Layout.parse(child).ifPresent(node -> listed.add(node.name()));
        }
        return Locked.get(lock, () -> {
            forgetUnheld(name -> !listed.contains(name));
            boolean added = false;
            for (String name : listed) {
                Entry entry = entries.get(name);
                if (entry == null
                        || (entry.state == State.HELD && entry.session != currentSession)
                        || (entry.state == State.GONE && read > entry.goneAfterRead)) {
                    move(name, State.CANDIDATE);
                    added = true;
                }
            }
            return added;
        });
    }

    /** The session ended, or a new one began: claim watches and claims of other sessions died with it. */
    void sessionEnded(long currentSession) {
        Locked.run(lock, () -> {
            for (Map.Entry<String, Entry> e : List.copyOf(entries.entrySet())) {
                Entry entry = e.getValue();
                if (entry.state == State.WATCHED || (entry.state == State.HELD && entry.session != currentSession)) {
                    move(e.getKey(), State.CANDIDATE);
                }
            }
        });
    }

    private boolean transition(String name, State from, State to) {
        return Locked.get(lock, () -> {
            Entry entry = entries.get(name);
            if (entry == null || entry.state != from) {
                return false;
            }
            move(name, to);
            return true;
        });
    }

    private boolean endHold(String name, long session, State to) {
        return Locked.get(lock, () -> {
            Entry entry = entries.get(name);
            if (entry == null || entry.state != State.HELD || entry.session != session) {
                return false; // a newer claim, or none: not this one's to end
            }
            move(name, to);
            return true;
        });
    }

    // Guarded by lock. Forgets the names {@code which} picks, except those a local consumer holds (TAKEN, HELD).
    private void forgetUnheld(Predicate<String> which) {
        for (Iterator<Map.Entry<String, Entry>> it = entries.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Entry> e = it.next();
            State state = e.getValue().state;
            if (which.test(e.getKey()) && state != State.TAKEN && state != State.HELD) {
                it.remove();
                candidates.remove(Layout.node(e.getKey()));
            }
        }
    }

    // Guarded by lock.
    private Entry move(String name, State to) {
        SequenceNode node = Layout.node(name); // before the entry is made: a bad name must leave nothing behind
        Entry entry = entries.computeIfAbsent(name, n -> new Entry(to));
        if (to == State.CANDIDATE) {
            candidates.add(node);
        } else {
            candidates.remove(node);
        }
        if (to != State.CANDIDATE && to != State.TAKEN) {
            entry.data = null;
        }
        entry.state = to;
        entry.session = 0;
        entry.goneAfterRead = readsSent;
        return entry;
    }
}
