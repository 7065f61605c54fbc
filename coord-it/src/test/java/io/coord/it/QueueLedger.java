package io.coord.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;

/**
 * The books of a queue run: what producers wrote for sure, what they may have written, and what consumers got. At
 * the end it names every item lost, duplicated or unexpected. Every one is a failure; to help read one, the report
 * still says whether it fits one of the two ways an earlier queue could lose or duplicate an item when a session
 * ended in mid-call:
 *
 * <ul>
 *   <li>a consumer's session ends exactly while its own poll removes an item: that item was lost;
 *   <li>a producer's session ends in the middle of a put, and a consumer takes the landed item before the producer
 *       looks for it: the producer wrote it again, so it was received twice.
 * </ul>
 *
 * A call "crossed a session" when its client's session id at the end differs from the one at the start. A loss
 * fits the first pattern only if a consumer call crossed a session while the items written next to the lost one were
 * being taken; a duplicate fits the second only if its write crossed a session and a copy was taken before the write
 * returned.
 */
final class QueueLedger {
    /** The start of one call on a client, before its outcome is known. */
    record Start(String who, CuratorFramework client, long nanos, long session) {}

    /** One finished call. */
    record Call(String who, long startNanos, long endNanos, long sessionBefore, long sessionAfter) {
        boolean crossedSession() {
            return sessionBefore != sessionAfter;
        }

        String describe(Timeline timeline) {
            return who + " from " + timeline.at(startNanos) + " to " + timeline.at(endNanos) + ", session 0x"
                    + Long.toHexString(sessionBefore) + " -> 0x" + Long.toHexString(sessionAfter);
        }
    }

    /** The violations, split by whether a documented gap can account for them. */
    record Report(List<String> documented, List<String> unexplained) {}

    private static final Duration CONTEXT = Duration.ofSeconds(2);
    private static final int CONTEXT_EVENTS = 40;
    private static final int DETAILED = 3;
    private static final int NEIGHBOURS = 2;
    private static final Duration NEIGHBOUR_SLACK = Duration.ofSeconds(1);

    private final Timeline timeline;
    private final Map<String, Call> sent = new ConcurrentHashMap<>();
    private final Map<String, Call> maybeSent = new ConcurrentHashMap<>();
    private final Set<String> refused = ConcurrentHashMap.newKeySet();
    private final Map<String, List<Call>> received = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Call> consumerCrossings = new ConcurrentLinkedQueue<>();
    private final AtomicInteger consumerFailures = new AtomicInteger();

    QueueLedger(Timeline timeline) {
        this.timeline = timeline;
    }

    Start start(String who, CuratorFramework client) {
        return new Start(who, client, System.nanoTime(), ClusterFixture.sessionId(client));
    }

    /** put returned, or offer returned true: the item is in the queue. */
    void sent(Start start, String item) {
        Call call = finish(start);
        sent.put(item, call);
        if (call.crossedSession()) {
            timeline.add(start.who() + " wrote " + item + " across a session change: " + call.describe(timeline));
        }
    }

    /** The write threw: the item may or may not be in the queue. */
    void maybeSent(Start start, String item, RuntimeException failure) {
        Call call = finish(start);
        maybeSent.put(item, call);
        timeline.add(start.who() + " may have written " + item + ", the call threw " + failure);
    }

    /** offer returned false: the item was not written. */
    void refused(Start start, String item) {
        finish(start);
        refused.add(item);
    }

    /** A poll or take returned; {@code item} is null when it timed out. */
    void received(Start start, String item) {
        Call call = finish(start);
        if (call.crossedSession()) {
            consumerCrossings.add(call);
            timeline.add(start.who() + " polled across a session change, got " + item + ": " + call.describe(timeline));
        }
        if (item != null) {
            received.compute(item, (k, calls) -> {
                List<Call> all = calls == null ? new ArrayList<>() : new ArrayList<>(calls);
                all.add(call);
                return all;
            });
        }
    }

    /** A poll or take threw. */
    void consumeFailed(Start start, RuntimeException failure) {
        Call call = finish(start);
        consumerFailures.incrementAndGet();
        if (call.crossedSession()) {
            consumerCrossings.add(call);
        }
        timeline.add(start.who() + " failed to poll: " + failure + " (" + call.describe(timeline) + ")");
    }

    int sentCount() {
        return sent.size();
    }

    int maybeCount() {
        return maybeSent.size();
    }

    int refusedCount() {
        return refused.size();
    }

    int receivedCount() {
        return received.size();
    }

    int consumerFailures() {
        return consumerFailures.get();
    }

    int consumerCrossings() {
        return consumerCrossings.size();
    }

    /** Every item lost, duplicated or unexpected, each with the events around it for the first few. */
    Report check() {
        List<String> documented = new ArrayList<>();
        List<String> unexplained = new ArrayList<>();
        List<Call> crossings = new ArrayList<>(consumerCrossings);
        crossings.sort(Comparator.comparingLong(Call::endNanos));
        // Items leave in sequence order, which is close to the order in which their writes returned.
        List<String> bySendTime = sent.entrySet().stream()
                .sorted(Comparator.comparingLong(e -> e.getValue().endNanos()))
                .map(Map.Entry::getKey)
                .toList();
        for (int i = 0; i < bySendTime.size(); i++) {
            String item = bySendTime.get(i);
            if (received.containsKey(item)) {
                continue;
            }
            Call put = sent.get(item);
            long[] found = removalWindow(bySendTime, i);
            long[] window = found != null ? found : new long[] {put.startNanos(), Long.MAX_VALUE};
            // One poll that crossed a session change can have dropped at most the one item it was removing, and
            // only while the lost item was at the head: when the items written next to it were being taken.
            Call culprit = crossings.stream()
                    .filter(c -> c.endNanos() >= Math.max(window[0], put.startNanos()) && c.startNanos() <= window[1])
                    .findFirst()
                    .orElse(null);
            String what = "lost " + item + ", sent by " + put.describe(timeline)
                    + (found == null
                            ? "; no item written near it was received"
                            : "; the items written next to it were taken from "
                                    + timeline.at(found[0] + NEIGHBOUR_SLACK.toNanos()) + " to "
                                    + timeline.at(found[1] - NEIGHBOUR_SLACK.toNanos()));
            if (culprit == null) {
                unexplained.add(what + "; no consumer call crossed a session change then"
                        + context(put.endNanos(), unexplained.size()));
            } else {
                crossings.remove(culprit);
                documented.add(what + "; consistent with the documented poll gap: " + culprit.describe(timeline)
                        + context(culprit.endNanos(), documented.size()));
            }
        }
        received.forEach((item, calls) -> {
            Call write = sent.containsKey(item) ? sent.get(item) : maybeSent.get(item);
            if (write == null) {
                unexplained.add("unexpected " + item + (refused.contains(item) ? ", whose offer returned false" : "")
                        + ", received by " + calls.get(0).describe(timeline)
                        + context(calls.get(0).endNanos(), unexplained.size()));
                return;
            }
            if (calls.size() > 1) {
                String what = "duplicated " + item + ", received " + calls.size() + " times: "
                        + calls.stream().map(c -> c.describe(timeline)).toList() + "; written by "
                        + write.describe(timeline);
                // The gap needs both: the producer's session ended mid-write, and a consumer took the first copy
                // before the producer could look for it, that is before the write returned.
                long firstTaken = calls.stream().mapToLong(Call::endNanos).min().orElseThrow();
                if (write.crossedSession() && firstTaken <= write.endNanos()) {
                    documented.add(what + "; consistent with the documented producer gap: the first copy was taken"
                            + " before the write returned" + context(write.endNanos(), documented.size()));
                } else {
                    unexplained.add(what + context(calls.get(1).endNanos(), unexplained.size()));
                }
            }
        });
        return new Report(documented, unexplained);
    }

    /**
     * When the item at {@code index} of the send order was probably removed: from the first to the last receipt of
     * the received items written just before and after it, widened by a slack; null if none was received.
     */
    private long[] removalWindow(List<String> bySendTime, int index) {
        long from = Long.MAX_VALUE;
        long to = Long.MIN_VALUE;
        int found = 0;
        for (int i = index - 1; i >= 0 && found < NEIGHBOURS; i--) {
            List<Call> calls = received.get(bySendTime.get(i));
            if (calls != null) {
                from = Math.min(from, calls.get(0).startNanos());
                to = Math.max(to, calls.get(0).endNanos());
                found++;
            }
        }
        found = 0;
        for (int i = index + 1; i < bySendTime.size() && found < NEIGHBOURS; i++) {
            List<Call> calls = received.get(bySendTime.get(i));
            if (calls != null) {
                from = Math.min(from, calls.get(0).startNanos());
                to = Math.max(to, calls.get(0).endNanos());
                found++;
            }
        }
        if (from == Long.MAX_VALUE) {
            return null;
        }
        long slack = NEIGHBOUR_SLACK.toNanos();
        return new long[] {from - slack, to + slack};
    }

    private Call finish(Start start) {
        return new Call(
                start.who(),
                start.nanos(),
                System.nanoTime(),
                start.session(),
                ClusterFixture.sessionId(start.client()));
    }

    private String context(long nanos, int index) {
        return index < DETAILED ? "\n" + timeline.around(nanos, CONTEXT, CONTEXT_EVENTS) : "";
    }
}
