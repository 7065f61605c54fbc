package io.coord.core.internal;

import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * Who uses one path's view, and how long the view outlives its last user ({@link ViewSettings#linger}): a lock cycle
 * leaves the view and comes back to it every time, and must not pay for a new watch each time.
 *
 * <p>Guarded by the view's lock. The linger timer calls {@code timerFired} with its due time on the timer's thread,
 * outside any lock; the view then asks {@link #lingerOver}.
 */
final class ViewUsers {
    private final LongSupplier lingerNanos;
    private final LongConsumer timerFired;
    private int users;
    private boolean lingering; // unused, but not for long enough to drop the watch yet
    private long idleSince; // when the last user left (System.nanoTime)
    private long timerDue; // when the earliest linger timer fires (System.nanoTime), 0 if none is set

    ViewUsers(LongSupplier lingerNanos, LongConsumer timerFired) {
        this.lingerNanos = lingerNanos;
        this.timerFired = timerFired;
    }

    void join() {
        users++;
        lingering = false;
    }

    /** One user fewer; true if it was the last. */
    boolean leave() {
        return --users == 0;
    }

    /** The last user left: the view lingers from now on. */
    void startLinger() {
        lingering = true;
        idleSince = System.nanoTime();
        timeLinger();
    }

    /**
     * Sets a timer for the end of the linger, unless one is due by then already: a timer set for an earlier idle spell
     * checks the idle time when it fires.
     */
    private void timeLinger() {
        long due = idleSince + lingerNanos.getAsLong();
        if (timerDue != 0 && timerDue - due <= 0) {
            return;
        }
        timerDue = due;
        Executors.TIMER.schedule(
                () -> timerFired.accept(due), Math.max(0, due - System.nanoTime()), TimeUnit.NANOSECONDS);
    }

    /** The timer due at {@code due} fired: true if the linger is over now, false if in use or idle too briefly. */
    boolean lingerOver(long due) {
        if (due == timerDue) {
            timerDue = 0;
        }
        if (!lingering || users > 0) {
            return false;
        }
        if (idleSince + lingerNanos.getAsLong() - System.nanoTime() > 0) {
            timeLinger(); // used and left again since this timer was set
            return false;
        }
        lingering = false;
        return true;
    }

    /** Nothing uses the view, and its linger is over. */
    boolean expired() {
        return users == 0 && !lingering;
    }

    /** Something uses the view, or may soon: within its linger. */
    boolean wanted() {
        return users > 0 || lingering;
    }

    /** Nobody uses it, lingering or not. */
    boolean none() {
        return users == 0;
    }

    @Override
    public String toString() {
        return users + " users" + (lingering ? ", lingering" : "");
    }
}
