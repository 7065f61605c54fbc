package io.coord.it;

import io.coord.it.ExclusionChecker.Holder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;

/**
 * Holders that still see their lease as valid although the servers have already deleted its znode: their session
 * ended, and the news has not reached them yet. Such a holder is not counted in a breach, but it must stop holding
 * within {@link #LIMIT}. Not thread-safe: {@link ExclusionChecker} calls it under its lock, but for
 * {@link #isGone}.
 */
final class StaleHolders {
    /** Tells whether a holder's znode is still on the servers. */
    @FunctionalInterface
    interface Referee {
        boolean onServers(Holder holder) throws Exception;

        /**
         * Reads through {@code reader}, a client that no fault touches, behind a sync: its server may lag the leader,
         * and one that has not applied a new holder's create yet would call that holder stale, excusing a real
         * breach.
         */
        static Referee readingThrough(CuratorFramework reader) {
            return holder -> {
                String path = holder.lease().path();
                CountDownLatch synced = new CountDownLatch(1);
                reader.sync()
                        .inBackground((client, event) -> synced.countDown())
                        .forPath(path);
                if (!synced.await(LIMIT.toMillis(), TimeUnit.MILLISECONDS)) {
                    return true; // no answer: count the holder, as if its znode were there
                }
                return reader.checkExists().forPath(path) != null;
            };
        }
    }

    /**
     * How long a stale holder may go on holding. The news usually takes about 100 ms; a client that hears nothing at
     * all drops its connection after two thirds of the session timeout, so within one timeout it knows.
     */
    static final Duration LIMIT = ClusterFixture.SESSION_TIMEOUT;

    private final Timeline timeline;
    private final Referee referee;
    private final Map<Holder, Long> since = new LinkedHashMap<>();
    private int found;
    private long longestNanos;

    /** With a null {@code referee}, nobody is ever found stale: every breach counts. */
    StaleHolders(Timeline timeline, Referee referee) {
        this.timeline = timeline;
        this.referee = referee;
    }

    /** Those of {@code holders} whose znode is gone; each is marked stale from {@code now}. */
    List<Holder> among(List<Holder> holders, long now) {
        List<Holder> stale = new ArrayList<>();
        for (Holder h : holders) {
            if (isMarked(h) || isGone(h)) {
                mark(h, now);
                stale.add(h);
            }
        }
        return stale;
    }

    boolean isMarked(Holder holder) {
        return since.containsKey(holder);
    }

    /** Asks the referee, and touches nothing here: it may be called without the checker's lock. */
    boolean isGone(Holder holder) {
        return referee != null && !onServers(holder);
    }

    /** Marks {@code holder} stale from {@code now}, unless it already is. */
    void mark(Holder holder, long now) {
        if (since.putIfAbsent(holder, now) == null) {
            found++;
            timeline.add(holder + " is stale: its znode is gone, so it is not counted, and it must stop holding within "
                    + LIMIT.toMillis() + " ms");
        }
    }

    /** The holder left; a breach if it was stale for longer than the limit. */
    Optional<String> left(Holder holder, long now) {
        Long from = since.remove(holder);
        if (from == null) {
            return Optional.empty();
        }
        longestNanos = Math.max(longestNanos, now - from);
        if (now - from <= LIMIT.toNanos()) {
            return Optional.empty();
        }
        return Optional.of(holder + " held on for " + (now - from) / 1_000_000 + " ms after " + timeline.at(from)
                + ", when its znode was already gone");
    }

    /** Breaches of the stale holders still inside past the limit; each is reported once. */
    List<String> overdue(long now) {
        List<String> overdue = new ArrayList<>();
        since.entrySet().removeIf(e -> {
            boolean late = now - e.getValue() > LIMIT.toNanos();
            if (late) {
                overdue.add(e.getKey() + " is still inside, though its znode was gone at " + timeline.at(e.getValue()));
            }
            return late;
        });
        return overdue;
    }

    /** Holders found stale so far. */
    int found() {
        return found;
    }

    /** The longest a stale holder that has left went on holding. */
    Duration longest() {
        return Duration.ofNanos(longestNanos);
    }

    private boolean onServers(Holder holder) {
        try {
            return referee.onServers(holder);
        } catch (Exception e) {
            timeline.add("cannot tell whether " + holder + " is on the servers, so it counts: " + e);
            return true;
        }
    }
}
