package io.coord.queue;

import io.coord.core.SequenceNode;
import io.coord.queue.NameState.Event;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The item names the consumers of one path in one client know of, each in one {@link NameState}; the candidates are
 * tried in sequence order. Each name is handed to one local consumer at a time. A name is held out while a local
 * consumer tries it, while another client's claim on it is watched, while a claim of ours holds it, and while our
 * claim on it is being deleted; a children read never brings such a name back.
 *
 * <p>Our claims are kept by name and session, as the server keeps them: a claim node is ours only while the session
 * that made it lives, and a claim of an ended session must never speak for a newer claim on the same item.
 */
final class NameCache {
    /** One name: its state, the session of our claim on it (HELD_HERE, RELEASING), and whether it was seen claimed. */
    private static final class Entry {
        NameState state = NameState.OUT_OF_PLAY;
        long session;
        /** A claim attempt found it claimed; cleared once it is taken, or once a read no longer lists it. */
        boolean seenClaimed;
    }

    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock. Names out of play that carry nothing worth keeping have no entry.
    private final Map<String, Entry> entries = new HashMap<>();
    // Guarded by lock, and written by move() alone: indexes of entries, the CANDIDATE names in sequence order and
    // the names that stepped aside (DEFERRED, STEPPING_ASIDE).
    private final TreeSet<SequenceNode> candidates = new TreeSet<>();
    private final Set<String> steppedAside = new HashSet<>();

    /** Reserves the first name for the caller until {@link #attempted}; null when none is cached. */
    String next() {
        lock.lock();
        try {
            if (candidates.isEmpty()) {
                return null;
            }
            String head = candidates.first().name();
            move(head, Event.HANDED_OUT);
            return head;
        } finally {
            lock.unlock();
        }
    }

    /** The first name, left in place (for peek). */
    String head() {
        lock.lock();
        try {
            return candidates.isEmpty() ? null : candidates.first().name();
        } finally {
            lock.unlock();
        }
    }

    boolean isEmpty() {
        lock.lock();
        try {
            return candidates.isEmpty();
        } finally {
            lock.unlock();
        }
    }

    /** An attempt on {@code name} is over; names that stepped aside for it come back. */
    void attempted(String name) {
        lock.lock();
        try {
            move(name, Event.ATTEMPT_ENDED);
            for (String stepped : List.copyOf(steppedAside)) {
                if (!stepped.equals(name)) {
                    move(stepped, Event.ANOTHER_ATTEMPT_ENDED);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** The item is gone. */
    void forget(String name) {
        lock.lock();
        try {
            move(name, Event.ITEM_GONE);
        } finally {
            lock.unlock();
        }
    }

    /**
     * A claim attempt found the name claimed. The first time, while other names remain, the claim most likely
     * belongs to a consumer taking the item right now: the name steps aside for one attempt on the next name, then
     * comes back at the head. Returns false if the caller should ask who holds the claim instead.
     */
    boolean deferOnFirstSighting(String name) {
        lock.lock();
        try {
            Entry entry = entries.computeIfAbsent(name, n -> new Entry());
            if (entry.seenClaimed) {
                return false;
            }
            entry.seenClaimed = true;
            if (candidates.isEmpty()) {
                return false;
            }
            move(name, Event.FIRST_SIGHTING);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** The name was taken, by us or by someone else: forget that it was ever seen claimed. */
    void settled(String name) {
        lock.lock();
        try {
            Entry entry = entries.get(name);
            if (entry != null) {
                entry.seenClaimed = false;
                dropIfEmpty(name, entry);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Holds a name out before asking, with a watch, who holds its claim; the watch brings it back. */
    void watchClaim(String name) {
        lock.lock();
        try {
            move(name, Event.WATCHING_CLAIM);
        } finally {
            lock.unlock();
        }
    }

    /** The claim is gone, or turned out ours. Returns true if the name came back into play. */
    boolean unwatchClaim(String name, boolean requeue) {
        lock.lock();
        try {
            return move(name, requeue ? Event.CLAIM_DELETED : Event.CLAIM_ANSWERED) && requeue;
        } finally {
            lock.unlock();
        }
    }

    /** A claim of ours, made on {@code session}, holds the name; {@code current} is the client's session now. */
    void holdHere(String name, long session, long current) {
        lock.lock();
        try {
            move(name, Event.HELD, session, current);
        } finally {
            lock.unlock();
        }
    }

    /** Whether a claim of ours made on {@code session} holds the name. */
    boolean holds(String name, long session) {
        lock.lock();
        try {
            Entry entry = entries.get(name);
            return entry != null && entry.state == NameState.HELD_HERE && entry.session == session;
        } finally {
            lock.unlock();
        }
    }

    /** The claim made on {@code session} is over; a claim of another session on the same name is left alone. */
    void dropHeld(String name, long session) {
        lock.lock();
        try {
            move(name, Event.HOLD_ENDED, session, 0);
        } finally {
            lock.unlock();
        }
    }

    /** Our claim on the name, made on {@code session}, is being deleted: it comes back once the delete is confirmed. */
    void releasing(String name, long session, long current) {
        lock.lock();
        try {
            move(name, Event.RELEASING, session, current);
        } finally {
            lock.unlock();
        }
    }

    /**
     * The delete of the claim made on {@code session} is confirmed. The name comes back unless a newer claim of ours
     * holds it. Returns true if it came back.
     */
    boolean released(String name, long session) {
        lock.lock();
        try {
            return move(name, Event.RELEASED, session, 0);
        } finally {
            lock.unlock();
        }
    }

    /** Adds the listed names not held out on the {@code current} session. Returns true if any was new. */
    boolean merge(List<String> children, long current) {
        boolean added = false;
        Set<String> listed = new HashSet<>(children);
        lock.lock();
        try {
            for (String name : List.copyOf(entries.keySet())) {
                if (!listed.contains(name)) { // the item is gone
                    entries.get(name).seenClaimed = false;
                    move(name, Event.NOT_LISTED);
                }
            }
            for (String child : children) {
                // A claim of another session died with it: its name is free again, and is listed like any other.
                if (Layout.parse(child).isPresent()) {
                    added |= move(child, Event.LISTED, 0, current) && entries.get(child).state == NameState.CANDIDATE;
                }
            }
        } finally {
            lock.unlock();
        }
        return added;
    }

    /**
     * A session ended, or the {@code current} one began: the watches on other clients' claims died, and so did every
     * claim of ours made on any session but the current one. Their names come back; claims of the current session,
     * which may have been made before this news arrived, stay.
     */
    void sessionEnded(long current) {
        lock.lock();
        try {
            for (String name : List.copyOf(entries.keySet())) {
                move(name, Event.SESSION_ENDED, 0, current);
            }
        } finally {
            lock.unlock();
        }
    }

    // Guarded by lock.
    private boolean move(String name, Event event) {
        return move(name, event, 0, 0);
    }

    /**
     * Guarded by lock. Every change of state goes through here, as {@link NameState#on} says, and keeps the indexes in
     * step. Returns true if the state changed.
     */
    private boolean move(String name, Event event, long session, long current) {
        Entry entry = entries.get(name);
        NameState from = entry == null ? NameState.OUT_OF_PLAY : entry.state;
        NameState to = from.on(event, entry == null ? 0 : entry.session, session, current);
        if (to == null) {
            if (entry != null) {
                dropIfEmpty(name, entry);
            }
            return false;
        }
        if (entry == null) {
            entry = new Entry();
            entries.put(name, entry);
        }
        index(name, from, false);
        entry.state = to;
        entry.session = to == NameState.HELD_HERE || to == NameState.RELEASING ? session : 0;
        index(name, to, true);
        dropIfEmpty(name, entry);
        return true;
    }

    // Guarded by lock.
    private void index(String name, NameState state, boolean add) {
        switch (state) {
            case CANDIDATE -> update(candidates, Layout.node(name), add);
            case DEFERRED, STEPPING_ASIDE -> update(steppedAside, name, add);
            default -> {}
        }
    }

    private static <E> void update(Set<E> index, E element, boolean add) {
        if (add) {
            index.add(element);
        } else {
            index.remove(element);
        }
    }

    // Guarded by lock.
    private void dropIfEmpty(String name, Entry entry) {
        if (entry.state == NameState.OUT_OF_PLAY && !entry.seenClaimed) {
            entries.remove(name);
        }
    }
}
