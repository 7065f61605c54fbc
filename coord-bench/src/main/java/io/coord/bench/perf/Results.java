package io.coord.bench.perf;

import java.util.List;

/**
 * Everything one bench run produced, for the console, {@code results.md} and {@code results.json}.
 *
 * @param date when the run started, ISO-8601
 * @param machine cores, JVM and OS
 * @param command the command line that produced it
 * @param rows the measured rows, in scenario order
 * @param targets the targets judged on this run
 * @param notes what a reader needs to interpret the figures: reduced sizes, extrapolations, the RTT
 * @param violations safety invariants that did not hold; any makes the run fail
 * @param errors scenarios that could not complete
 */
public record Results(
        String date,
        String machine,
        String command,
        List<Row> rows,
        List<TargetResult> targets,
        List<String> notes,
        List<String> violations,
        List<String> errors) {

    public Results {
        rows = List.copyOf(rows);
        targets = List.copyOf(targets);
        notes = List.copyOf(notes);
        violations = List.copyOf(violations);
        errors = List.copyOf(errors);
    }

    public boolean failed() {
        return !violations.isEmpty() || !errors.isEmpty();
    }
}
