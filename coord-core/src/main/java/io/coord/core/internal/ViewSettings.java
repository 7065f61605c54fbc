package io.coord.core.internal;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a client uses views (see {@link PathView}), read from system properties when coord first meets the client:
 *
 * <ul>
 *   <li>{@code coord.view} — {@code on} (the default) or {@code off}. Off forces every path of the client into the
 *       predecessor-watch engine: one children read per entry and one watch per waiter, no persistent watch.
 *   <li>{@code coord.view.maxOthers} — the herd bound: a client keeps a path's view only while the path holds at
 *       most this many nodes besides its own (default 32), checked at each of its own entries and at every create
 *       the view hears. Above it the path falls back to predecessor watches, and comes back to the view once four
 *       reads in a row find at most half as many ({@link HerdBound}). A crowded view keeps that verdict for at
 *       least a minute after its last use, whatever the linger.
 *   <li>{@code coord.view.linger} — how long a view outlives its last user: no acquisition, no held lease and no
 *       observer of the client on the path (default {@code PT2S}, ISO-8601, or a number of milliseconds). Then its
 *       persistent watch is removed on the server.
 * </ul>
 *
 * @param enabled whether paths may use a view at all
 * @param maxOthers the herd bound
 * @param linger how long an unused view keeps its watch
 */
public record ViewSettings(boolean enabled, int maxOthers, Duration linger) {
    private static final Logger log = LoggerFactory.getLogger(ViewSettings.class);
    /** The longest linger: an idle view is a watch the servers keep, and a day is already far past any use. */
    public static final Duration MAX_LINGER = Duration.ofDays(1);

    public static final ViewSettings DEFAULTS = new ViewSettings(true, 32, Duration.ofSeconds(2));

    public ViewSettings {
        if (maxOthers < 0) {
            throw new IllegalArgumentException("maxOthers must be >= 0: " + maxOthers);
        }
        if (linger == null || linger.isNegative() || linger.compareTo(MAX_LINGER) > 0) {
            throw new IllegalArgumentException("linger must be a duration from 0 to " + MAX_LINGER + ": " + linger);
        }
    }

    /** The linger in nanoseconds; it always fits, being at most {@link #MAX_LINGER}. */
    long lingerNanos() {
        return Deadline.saturatedNanos(linger);
    }

    /** The settings the system properties ask for; a property that does not parse keeps its default, with a warning. */
    public static ViewSettings fromSystemProperties() {
        String enabled = System.getProperty("coord.view", "on").trim();
        String maxOthers = System.getProperty("coord.view.maxOthers");
        String linger = System.getProperty("coord.view.linger");
        return new ViewSettings(
                !enabled.equalsIgnoreCase("off") && !enabled.equalsIgnoreCase("false"),
                maxOthers == null ? DEFAULTS.maxOthers : parseCount("coord.view.maxOthers", maxOthers),
                linger == null ? DEFAULTS.linger : parseDuration("coord.view.linger", linger));
    }

    public ViewSettings withEnabled(boolean on) {
        return new ViewSettings(on, maxOthers, linger);
    }

    public ViewSettings withMaxOthers(int bound) {
        return new ViewSettings(enabled, bound, linger);
    }

    public ViewSettings withLinger(Duration duration) {
        return new ViewSettings(enabled, maxOthers, duration);
    }

    private static int parseCount(String name, String value) {
        try {
            int n = Integer.parseInt(value.trim());
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        log.warn("{}={} is not a count; using {}", name, value, DEFAULTS.maxOthers);
        return DEFAULTS.maxOthers;
    }

    private static Duration parseDuration(String name, String value) {
        String v = value.trim();
        try {
            Duration d =
                    v.chars().allMatch(Character::isDigit) ? Duration.ofMillis(Long.parseLong(v)) : Duration.parse(v);
            if (!d.isNegative() && d.compareTo(MAX_LINGER) <= 0) {
                return d;
            }
        } catch (DateTimeParseException | NumberFormatException | ArithmeticException e) {
            // reported below
        }
        log.warn("{}={} is not a duration from 0 to {}; using {}", name, value, MAX_LINGER, DEFAULTS.linger);
        return DEFAULTS.linger;
    }
}
