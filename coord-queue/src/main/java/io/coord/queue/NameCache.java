package io.coord.queue;

import io.coord.core.SequenceNode;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The item names the consumers of one path in one client still have to try, in sequence order, and the names held
 * out of play. Each name is handed to one local consumer at a time. A name is held out while a local consumer tries
 * it, while another client's claim on it is watched, while a claim of ours holds it, and while our claim on it is
 * being deleted; a children read never brings such a name back.
 *
 * <p>Our claims are kept by name and session, as the server keeps them: a claim node is ours only while the session
 * that made it lives, and a claim of an ended session must never speak for a newer claim on the same item.
 */
final class NameCache {
    /** A claim of ours: the item's name and the session whose ephemeral node holds it. */
    private record Hold(String name, long session) {}

    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private final TreeSet<SequenceNode> candidates = new TreeSet<>();
    private final Set<String> attempting = new HashSet<>();
    private final Set<String> claimedElsewhere = new HashSet<>();
    private final Set<Hold> heldHere = new HashSet<>();
    private final Set<Hold> releasing = new HashSet<>();
    private final Set<String> seenClaimed = new HashSet<>();
    private final Set<String> deferred = new HashSet<>();

    /** Reserves the first name for the caller until {@link #attempted}; null when none is cached. */
    String next() {
        lock.lock();
        try {
            SequenceNode head = candidates.pollFirst();
            if (head == null) {
                return null;
            }
            attempting.add(head.name());
            return head.name();
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
            attempting.remove(name);
            for (Iterator<String> it = deferred.iterator(); it.hasNext(); ) {
                String stepped = it.next();
                if (!stepped.equals(name)) {
                    candidates.add(Layout.node(stepped));
                    it.remove();
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
            candidates.remove(Layout.node(name));
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
            if (seenClaimed.add(name) && !candidates.isEmpty()) {
                deferred.add(name);
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** The name was taken, by us or by someone else: forget that it was ever seen claimed. */
    void settled(String name) {
        lock.lock();
        try {
            seenClaimed.remove(name);
        } finally {
            lock.unlock();
        }
    }

    /** Holds a name out before asking, with a watch, who holds its claim; the watch brings it back. */
    void watchClaim(String name) {
        lock.lock();
        try {
            candidates.remove(Layout.node(name));
            claimedElsewhere.add(name);
        } finally {
            lock.unlock();
        }
    }

    /** The claim is gone, or turned out ours. Returns true if the name came back into play. */
    boolean unwatchClaim(String name, boolean requeue) {
        lock.lock();
        try {
            boolean requeued = claimedElsewhere.remove(name) && requeue;
            if (requeued) {
                candidates.add(Layout.node(name));
            }
            return requeued;
        } finally {
            lock.unlock();
        }
    }

    /** A claim of ours, made on {@code session}, holds the name. */
    void holdHere(String name, long session) {
        lock.lock();
        try {
            heldHere.add(new Hold(name, session));
            candidates.remove(Layout.node(name));
        } finally {
            lock.unlock();
        }
    }

    /** Whether a claim of ours made on {@code session} holds the name. */
    boolean holds(String name, long session) {
        lock.lock();
        try {
            return heldHere.contains(new Hold(name, session));
        } finally {
            lock.unlock();
        }
    }

    /** The claim made on {@code session} is over; a claim of another session on the same name is left alone. */
    void dropHeld(String name, long session) {
        lock.lock();
        try {
            heldHere.remove(new Hold(name, session));
        } finally {
            lock.unlock();
        }
    }

    /** Our claim on the name, made on {@code session}, is being deleted: it comes back once the delete is confirmed. */
    void releasing(String name, long session) {
        lock.lock();
        try {
            Hold hold = new Hold(name, session);
            heldHere.remove(hold);
            releasing.add(hold);
        } finally {
            lock.unlock();
        }
    }

    /**
     * The delete of the claim made on {@code session} is confirmed. The name comes back unless a newer claim of ours,
     * made on the {@code current} session, holds it. Returns true if it came back.
     */
    boolean released(String name, long session, long current) {
        lock.lock();
        try {
            if (!releasing.remove(new Hold(name, session)) || heldHere.contains(new Hold(name, current))) {
                return false;
            }
            return candidates.add(Layout.node(name));
        } finally {
            lock.unlock();
        }
    }

    /** Adds the listed names not held out on the {@code current} session. Returns true if any was new. */
    boolean merge(List<String> children, long current) {
        boolean added = false;
        lock.lock();
        try {
            seenClaimed.retainAll(children); // forget items that are gone
            deferred.clear(); // listed ones come back below, the others are gone
            for (String child : children) {
                // A claim of another session died with it: its name is free again, and is listed like any other.
                if (!isHeldOut(child, current)) {
                    added |= Layout.parse(child).map(candidates::add).orElse(false);
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
            claimedElsewhere.forEach(n -> candidates.add(Layout.node(n)));
            claimedElsewhere.clear();
            requeueUnless(heldHere, current);
            requeueUnless(releasing, current);
        } finally {
            lock.unlock();
        }
    }

    // Guarded by lock.
    private boolean isHeldOut(String name, long current) {
        Hold ours = new Hold(name, current);
        return attempting.contains(name)
                || claimedElsewhere.contains(name)
                || heldHere.contains(ours)
                || releasing.contains(ours);
    }

    // Guarded by lock.
    private void requeueUnless(Set<Hold> holds, long current) {
        for (Iterator<Hold> it = holds.iterator(); it.hasNext(); ) {
            Hold hold = it.next();
            if (hold.session() != current) {
                it.remove();
                if (!isHeldOut(hold.name(), current)) {
                    candidates.add(Layout.node(hold.name()));
                }
            }
        }
    }
}
