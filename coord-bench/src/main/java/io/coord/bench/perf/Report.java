package io.coord.bench.perf;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Renders {@link Results} as the console table and as Markdown. */
public final class Report {
    private static final String CONSOLE_ROW = "    %-34s %8s %9s %9s %9s %11s %7s %7s %8s  %s%n";

    private Report() {}

    public static String console(Results results) {
        StringBuilder out = new StringBuilder();
        out.append(results.command()).append('\n');
        out.append(results.date()).append(", ").append(results.machine()).append("\n\n");
        out.append(String.format(
                Locale.ROOT,
                CONSOLE_ROW,
                "implementation",
                "ops",
                "median",
                "p99",
                "mean",
                "throughput",
                "req/op",
                "pkts/op",
                "cpu/op",
                "extra"));
        String lastScenario = "";
        for (Row row : results.rows()) {
            if (!row.scenario().equals(lastScenario)) {
                out.append('\n')
                        .append(row.scenario())
                        .append("  ")
                        .append(row.title())
                        .append('\n');
                lastScenario = row.scenario();
            }
            out.append("  ").append(row.variant()).append('\n');
            appendConsole(out, row.coord(), row.extraName());
            row.curator().forEach(f -> appendConsole(out, f, row.extraName()));
            for (Figures.Ratios r : row.ratios()) {
                List<String> cells = new ArrayList<>(List.of("coord/" + shortName(r.versus()), ""));
                cells.addAll(ratioCells(row, r));
                out.append(String.format(Locale.ROOT, CONSOLE_ROW, cells.toArray()));
            }
        }
        out.append("\nTargets (coord/Curator ratios unless stated)\n");
        for (TargetResult t : results.targets()) {
            out.append(String.format(
                    Locale.ROOT, "  %-4s %-58s %-8s measured %s%n", t.verdict(), t.name(), t.rule(), measured(t)));
        }
        appendList(out, "\nNotes\n", results.notes());
        appendList(out, "\nSAFETY VIOLATIONS\n", results.violations());
        appendList(out, "\nERRORS\n", results.errors());
        out.append(verdict(results)).append('\n');
        return out.toString();
    }

    public static String markdown(Results results) {
        StringBuilder md = new StringBuilder();
        md.append("# coord-bench results\n\n");
        md.append("`")
                .append(results.command())
                .append("` — ")
                .append(results.date())
                .append(", ");
        md.append(results.machine()).append("\n\n");
        md.append(
                "| # | scenario | variant | implementation | ops | median | p99 | mean | throughput | req/op | pkts/op | cpu/op | extra |\n");
        md.append("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for (Row row : results.rows()) {
            appendMarkdown(md, row, row.coord());
            row.curator().forEach(f -> appendMarkdown(md, row, f));
            for (Figures.Ratios r : row.ratios()) {
                md.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %s | **coord / %s** |  | %s |%n",
                        row.scenario(),
                        row.title(),
                        row.variant(),
                        shortName(r.versus()),
                        String.join(" | ", ratioCells(row, r))));
            }
        }
        md.append("\n## Targets\n\n| verdict | target | rule | measured |\n|---|---|---|---:|\n");
        for (TargetResult t : results.targets()) {
            md.append(String.format(
                    Locale.ROOT, "| %s | %s | %s | %s |%n", t.verdict(), t.name(), t.rule(), measured(t)));
        }
        appendMarkdownList(md, "Notes", results.notes());
        appendMarkdownList(md, "Safety violations", results.violations());
        appendMarkdownList(md, "Errors", results.errors());
        md.append('\n').append(verdict(results)).append('\n');
        return md.toString();
    }

    /** The eight ratio cells of a coord/Curator line, in column order, for the console and Markdown alike. */
    private static List<String> ratioCells(Row row, Figures.Ratios r) {
        return List.of(
                Format.ratio(r.median()),
                Format.ratio(r.p99()),
                Format.ratio(r.mean()),
                Format.ratio(r.throughput()),
                Format.ratio(r.requestsPerOp()),
                Format.ratio(r.packetsPerOp()),
                Format.ratio(r.cpuPerOp()),
                row.extraName().isEmpty() ? "" : Format.ratio(r.extra()));
    }

    /** The implementation name without its "Curator " prefix, to keep the ratio label short. */
    static String shortName(String impl) {
        return impl.startsWith("Curator ") ? impl.substring("Curator ".length()) : impl;
    }

    static String verdict(Results results) {
        long missed = results.targets().stream().filter(t -> !t.pass()).count();
        String targets =
                (results.targets().size() - missed) + "/" + results.targets().size() + " targets met";
        if (!results.violations().isEmpty()) {
            return "FAIL: " + results.violations().size() + " safety violation(s); " + targets;
        }
        if (!results.errors().isEmpty()) {
            return "FAIL: " + results.errors().size() + " scenario error(s); " + targets;
        }
        return "OK: every safety check held; " + targets;
    }

    private static String measured(TargetResult t) {
        return Double.isNaN(t.measured())
                ? "not measured"
                : String.format(Locale.ROOT, t.measured() >= 100 ? "%.0f" : "%.2f", t.measured());
    }

    private static void appendConsole(StringBuilder out, Figures f, String extraName) {
        out.append(String.format(
                Locale.ROOT,
                CONSOLE_ROW,
                f.impl(),
                Format.count(f.ops()),
                Format.latency(f.medianMicros()),
                Format.latency(f.p99Micros()),
                Format.latency(f.meanMicros()),
                Format.throughput(f.throughput()),
                Format.perOp(f.requestsPerOp()),
                Format.perOp(f.packetsPerOp()),
                Format.latency(f.cpuMicrosPerOp()),
                Format.extra(f.extra(), extraName)));
    }

    private static void appendMarkdown(StringBuilder md, Row row, Figures f) {
        md.append(String.format(
                Locale.ROOT,
                "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                row.scenario(),
                row.title(),
                row.variant(),
                f.impl(),
                Format.count(f.ops()),
                Format.latency(f.medianMicros()),
                Format.latency(f.p99Micros()),
                Format.latency(f.meanMicros()),
                Format.throughput(f.throughput()),
                Format.perOp(f.requestsPerOp()),
                Format.perOp(f.packetsPerOp()),
                Format.latency(f.cpuMicrosPerOp()),
                Format.extra(f.extra(), row.extraName())));
    }

    private static void appendList(StringBuilder out, String heading, List<String> items) {
        if (items.isEmpty()) {
            return;
        }
        out.append(heading);
        items.forEach(i -> out.append("  - ").append(i).append('\n'));
    }

    private static void appendMarkdownList(StringBuilder md, String heading, List<String> items) {
        if (items.isEmpty()) {
            return;
        }
        md.append("\n## ").append(heading).append("\n\n");
        items.forEach(i -> md.append("- ").append(i).append('\n'));
    }
}
