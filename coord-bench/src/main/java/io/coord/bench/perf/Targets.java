package io.coord.bench.perf;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** The targets, judged on one run's rows. A row that is missing (not run, or failed) is a miss. */
final class Targets {
    private Targets() {}

    /**
     * Judges the targets of the scenarios in {@code attempted}; the others were not asked for.
     *
     * @param link how the clients reached the servers, e.g. "loopback" or "rtt 1ms", for scenario 1's label
     */
    static List<TargetResult> evaluate(List<Row> rows, String link, Set<String> attempted) {
        return evaluate(rows, link).stream()
                .filter(t -> attempted.contains(t.name().substring(0, t.name().indexOf(' '))))
                .toList();
    }

    static List<TargetResult> evaluate(List<Row> rows, String link) {
        List<TargetResult> targets = new ArrayList<>();
        targets.add(TargetResult.atMost(
                "1 uncontended median latency (" + link + ")",
                ratio(rows, "1", "1 session").map(Figures.Ratios::median).orElse(Double.NaN),
                0.70));
        for (String sessions : List.of("8 sessions", "32 sessions")) {
            targets.add(TargetResult.atLeast(
                    "2 contended throughput, " + sessions,
                    ratio(rows, "2", sessions).map(Figures.Ratios::throughput).orElse(Double.NaN),
                    1.5));
        }
        targets.add(TargetResult.atMost("3 coord mean hand-off, longest / shortest queue", handOffGrowth(rows), 1.3));
        targets.add(TargetResult.atLeast(
                "5 semaphore throughput",
                ratio(rows, "5", null).map(Figures.Ratios::throughput).orElse(Double.NaN),
                2));
        queueTargets(rows, targets);
        targets.add(TargetResult.atMost(
                "7 failover median latency",
                ratio(rows, "7", null).map(Figures.Ratios::median).orElse(Double.NaN),
                0.7));
        targets.add(TargetResult.below(
                "8 coord threads added while waiters pend (absolute)",
                row(rows, "8", null).map(r -> r.coord().extra()).orElse(Double.NaN),
                20));
        targets.add(TargetResult.atLeast(
                "9 herd check throughput, " + HerdCheck.SESSIONS + " sessions",
                ratio(rows, "9", null).map(Figures.Ratios::throughput).orElse(Double.NaN),
                1.0));
        return targets;
    }

    /**
     * Scenario 6, the queue: drainTo at least 10 times both Curator queues' drain and under half a request per item;
     * single polls at least 1.5 times and at most 2 requests per item; offers as fast as SimpleDistributedQueue's at
     * no more than 1.1 requests per item.
     */
    private static void queueTargets(List<Row> rows, List<TargetResult> targets) {
        speedUps(rows, targets, "drainTo 10,000 items (batch " + QueueDrain.DRAIN_BATCH + ")", "drainTo 10,000", 10);
        targets.add(TargetResult.below(
                "6 drainTo 10,000, coord requests per item (absolute)", coordRequests(rows, "drainTo 10,000"), 0.5));
        speedUps(rows, targets, "drain 10,000 items", "drain 10,000", 1.5);
        targets.add(TargetResult.atMost(
                "6 drain 10,000, coord requests per item (absolute)", coordRequests(rows, "drain 10,000"), 2));
        targets.add(TargetResult.atLeast(
                "6 offer 10,000, throughput vs SimpleDistributedQueue",
                row(rows, "6", "offer 10,000 items")
                        .flatMap(r -> r.ratios().stream().findFirst())
                        .map(Figures.Ratios::throughput)
                        .orElse(Double.NaN),
                1.0));
        targets.add(TargetResult.atMost(
                "6 offer 10,000, coord requests per item (absolute)", coordRequests(rows, "offer 10,000"), 1.1));
    }

    private static void speedUps(List<Row> rows, List<TargetResult> targets, String variant, String label, double min) {
        Optional<Row> row = row(rows, "6", variant);
        if (row.isEmpty()) {
            targets.add(TargetResult.atLeast("6 " + label + ", speed-up", Double.NaN, min));
            return;
        }
        for (Figures.Ratios r : row.get().ratios()) {
            targets.add(TargetResult.atLeast(
                    "6 " + label + ", speed-up vs " + Report.shortName(r.versus()), r.throughput(), min));
        }
    }

    private static double coordRequests(List<Row> rows, String variantStart) {
        return rows.stream()
                .filter(r -> r.scenario().equals("6") && r.variant().startsWith(variantStart))
                .findFirst()
                .map(r -> r.coord().requestsPerOp())
                .orElse(Double.NaN);
    }

    /** coord's mean hand-off at the longest queue measured over its mean at the shortest. */
    static double handOffGrowth(List<Row> rows) {
        List<Row> handOff = rows.stream().filter(r -> r.scenario().equals("3")).toList();
        if (handOff.size() < 2) {
            return Double.NaN;
        }
        return Figures.ratio(
                handOff.get(handOff.size() - 1).coord().meanMicros(),
                handOff.get(0).coord().meanMicros());
    }

    private static Optional<Figures.Ratios> ratio(List<Row> rows, String scenario, String variant) {
        return row(rows, scenario, variant).flatMap(r -> r.ratios().stream().findFirst());
    }

    /** The row of {@code scenario}, with {@code variant} unless it is null. */
    private static Optional<Row> row(List<Row> rows, String scenario, String variant) {
        return rows.stream()
                .filter(r -> r.scenario().equals(scenario)
                        && (variant == null || r.variant().equals(variant)))
                .findFirst();
    }
}
