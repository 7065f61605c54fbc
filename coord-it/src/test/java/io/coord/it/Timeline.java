package io.coord.it;

import java.time.Duration;
import java.util.Comparator;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/** What happened during a run, with times, so that a failed check can show the events around it. */
final class Timeline {
    private record Event(long nanos, String thread, String what) {}

    private final long start = System.nanoTime();
    private final ConcurrentLinkedQueue<Event> events = new ConcurrentLinkedQueue<>();

    void add(String what) {
        events.add(new Event(System.nanoTime(), Thread.currentThread().getName(), what));
    }

    /** Time since the run began, as the timeline prints it. */
    String at(long nanos) {
        return String.format(Locale.ROOT, "+%.3fs", (nanos - start) / 1e9);
    }

    /** Up to {@code limit} events nearest to {@code nanos}, at most {@code window} away, in order, one a line. */
    String around(long nanos, Duration window, int limit) {
        return around(nanos, window, limit, what -> true);
    }

    /** Like {@link #around(long, Duration, int)}, keeping only the events whose text passes {@code filter}. */
    String around(long nanos, Duration window, int limit, Predicate<String> filter) {
        long w = window.toNanos();
        return events.stream()
                .filter(e -> Math.abs(e.nanos() - nanos) <= w && filter.test(e.what()))
                .sorted(Comparator.comparingLong(e -> Math.abs(e.nanos() - nanos)))
                .limit(limit)
                .sorted(Comparator.comparingLong(Event::nanos))
                .map(e -> "  " + at(e.nanos()) + " [" + e.thread() + "] " + e.what())
                .collect(Collectors.joining("\n"));
    }
}
