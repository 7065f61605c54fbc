package io.coord.bench.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ReportTest {
    private static final double NA = Double.NaN;

    private static Figures figures(String impl, double median, double throughput, double requests) {
        return new Figures(impl, 100, median, median * 2, median, throughput, requests, requests * 2, median / 4, NA);
    }

    @Test
    void ratiosAreCoordOverCurator() {
        Figures.Ratios r = figures("coord X", 700, 300, 3).over(figures("Curator Y", 1_000, 200, 4));
        assertEquals("Curator Y", r.versus());
        assertEquals(0.7, r.median(), 1e-9);
        assertEquals(1.5, r.throughput(), 1e-9);
        assertEquals(0.75, r.requestsPerOp(), 1e-9);
        assertEquals(0.75, r.packetsPerOp(), 1e-9);
        assertEquals(0.7, r.cpuPerOp(), 1e-9);
    }

    @Test
    void aMissingFigureGivesNoRatio() {
        Figures.Ratios r = figures("coord X", NA, 300, NA).over(figures("Curator Y", 1_000, 0, 4));
        assertTrue(Double.isNaN(r.median()));
        assertTrue(Double.isNaN(r.throughput()), "division by zero is not a figure");
        assertTrue(Double.isNaN(r.requestsPerOp()));
    }

    @Test
    void figuresPrintWithUnits() {
        assertEquals("842us", Format.latency(842.4));
        assertEquals("1.23ms", Format.latency(1_234));
        assertEquals("12.3ms", Format.latency(12_345));
        assertEquals("1.50s", Format.latency(1_500_000));
        assertEquals("n/a", Format.latency(NA));
        assertEquals("1,234/s", Format.throughput(1_234.4));
        assertEquals("6.4/s", Format.throughput(6.4));
        assertEquals("0.0030", Format.ratio(0.003), "a tiny ratio keeps its digits");
        assertEquals("155.91", Format.ratio(155.905));
        assertEquals("1ms", Format.duration(Duration.ofMillis(1)));
        assertEquals("500us", Format.duration(Duration.ofNanos(500_000)));
    }

    @Test
    void targetsAreJudgedOnlyOnMeasuredFigures() {
        assertTrue(TargetResult.atMost("a", 0.7, 0.70).pass());
        assertFalse(TargetResult.atMost("a", 0.71, 0.70).pass());
        assertTrue(TargetResult.atLeast("b", 1.5, 1.5).pass());
        assertFalse(TargetResult.below("c", 20, 20).pass());
        assertFalse(TargetResult.atMost("d", NA, 0.70).pass(), "not measured is a miss");
        assertEquals("<= 0.70", TargetResult.atMost("a", 0.5, 0.70).rule());
        assertEquals(">= 10", TargetResult.atLeast("b", 11, 10).rule());
    }

    @Test
    void targetsComeFromTheRows() {
        List<Row> rows = List.of(
                new Row("1", "t", "1 session", figures("coord", 600, 10, 3), List.of(figures("Curator", 1_000, 8, 3))),
                new Row("3", "t", "10 waiters", figures("coord", 500, 10, 1), List.of(figures("Curator", 500, 8, 2))),
                new Row(
                        "3",
                        "t",
                        "1000 waiters",
                        figures("coord", 600, 10, 1),
                        List.of(figures("Curator", 900, 8, 2))));
        List<TargetResult> targets = Targets.evaluate(rows, "rtt 1ms", Set.of("1", "3"));
        assertEquals(2, targets.size(), "only the scenarios that ran are judged");
        assertEquals("1 uncontended median latency (rtt 1ms)", targets.get(0).name());
        assertEquals(0.6, targets.get(0).measured(), 1e-9);
        assertTrue(targets.get(0).pass());
        assertEquals(1.2, targets.get(1).measured(), 1e-9);
        assertTrue(targets.get(1).pass());
    }

    @Test
    void aViolationFailsTheRunAndIsPrinted() {
        Results ok = results(List.of());
        Results bad = results(List.of("2 coord ReentrantMutex: 2 holders at once, limit 1"));
        assertFalse(ok.failed());
        assertTrue(bad.failed());
        String console = Report.console(bad);
        assertTrue(console.contains("SAFETY VIOLATIONS"));
        assertTrue(console.contains("2 holders at once"));
        assertTrue(console.strip().endsWith("0/1 targets met"), console);
        assertTrue(Report.markdown(bad).contains("## Safety violations"));
    }

    @Test
    void consoleShowsEachImplementationAndItsRatio() {
        String console = Report.console(results(List.of()));
        assertTrue(console.contains("coord ReentrantMutex"));
        assertTrue(console.contains("Curator InterProcessMutex"));
        assertTrue(console.contains("coord/InterProcessMutex"));
        assertTrue(console.contains("MISS 1 uncontended"));
    }

    @Test
    void jsonHasNullsForMissingFiguresAndEscapesText() {
        String json = JsonReport.render(results(List.of("a \"quoted\"\nline")));
        assertTrue(json.contains("\"extra\": null"));
        assertTrue(json.contains("\"packets_per_op\": 6"), json);
        assertTrue(json.contains("\"a \\\"quoted\\\"\\nline\""));
        assertTrue(json.contains("\"passed\": false"));
        assertEquals("0.5", JsonReport.num(0.5));
        assertEquals("12", JsonReport.num(12.0));
        assertEquals("null", JsonReport.num(NA));
    }

    private static Results results(List<String> violations) {
        Row row = new Row(
                "1",
                "uncontended",
                "1 session",
                figures("coord ReentrantMutex", 900, 10, 3),
                List.of(figures("Curator InterProcessMutex", 1_000, 8, 3)));
        return new Results(
                "2025-01-01T00:00Z",
                "2 cores",
                "coord-bench bench",
                List.of(row),
                List.of(TargetResult.atMost("1 uncontended", 0.9, 0.7)),
                List.of("a note"),
                violations,
                List.of());
    }
}
