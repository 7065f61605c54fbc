package io.coord.bench.perf;

import java.util.List;
import java.util.Locale;

/**
 * Renders {@link Results} as JSON by hand: the shape is small and fixed, and a JSON library would be one more
 * dependency to converge. Figures that were not measured are {@code null}, never a made-up number.
 */
public final class JsonReport {
    private JsonReport() {}

    public static String render(Results r) {
        StringBuilder j = new StringBuilder("{\n");
        j.append("  \"date\": ").append(str(r.date())).append(",\n");
        j.append("  \"machine\": ").append(str(r.machine())).append(",\n");
        j.append("  \"command\": ").append(str(r.command())).append(",\n");
        j.append("  \"rows\": [");
        for (int i = 0; i < r.rows().size(); i++) {
            j.append(i == 0 ? "\n" : ",\n").append(row(r.rows().get(i)));
        }
        j.append("\n  ],\n  \"targets\": [");
        for (int i = 0; i < r.targets().size(); i++) {
            TargetResult t = r.targets().get(i);
            j.append(i == 0 ? "\n" : ",\n")
                    .append("    {\"name\": ")
                    .append(str(t.name()))
                    .append(", \"rule\": ")
                    .append(str(t.rule()))
                    .append(", \"measured\": ")
                    .append(num(t.measured()))
                    .append(", \"verdict\": ")
                    .append(str(t.verdict()))
                    .append('}');
        }
        j.append("\n  ],\n");
        j.append("  \"notes\": ").append(strings(r.notes())).append(",\n");
        j.append("  \"violations\": ").append(strings(r.violations())).append(",\n");
        j.append("  \"errors\": ").append(strings(r.errors())).append(",\n");
        j.append("  \"passed\": ").append(!r.failed()).append("\n}\n");
        return j.toString();
    }

    private static String row(Row row) {
        StringBuilder j = new StringBuilder("    {");
        j.append("\"scenario\": ").append(str(row.scenario()));
        j.append(", \"title\": ").append(str(row.title()));
        j.append(", \"variant\": ").append(str(row.variant()));
        j.append(", \"extra\": ").append(str(row.extraName()));
        j.append(",\n     \"results\": [");
        j.append(figures(row.coord()));
        row.curator().forEach(f -> j.append(", ").append(figures(f)));
        j.append("],\n     \"ratios\": [");
        List<Figures.Ratios> ratios = row.ratios();
        for (int i = 0; i < ratios.size(); i++) {
            Figures.Ratios x = ratios.get(i);
            j.append(i == 0 ? "" : ", ")
                    .append("{\"versus\": ")
                    .append(str(x.versus()))
                    .append(", \"median\": ")
                    .append(num(x.median()))
                    .append(", \"p99\": ")
                    .append(num(x.p99()))
                    .append(", \"mean\": ")
                    .append(num(x.mean()))
                    .append(", \"throughput\": ")
                    .append(num(x.throughput()))
                    .append(", \"requests_per_op\": ")
                    .append(num(x.requestsPerOp()))
                    .append(", \"packets_per_op\": ")
                    .append(num(x.packetsPerOp()))
                    .append(", \"cpu_per_op\": ")
                    .append(num(x.cpuPerOp()))
                    .append(", \"extra\": ")
                    .append(num(x.extra()))
                    .append('}');
        }
        return j.append("]}").toString();
    }

    private static String figures(Figures f) {
        return "{\"impl\": " + str(f.impl()) + ", \"ops\": " + f.ops() + ", \"median_us\": " + num(f.medianMicros())
                + ", \"p99_us\": " + num(f.p99Micros()) + ", \"mean_us\": " + num(f.meanMicros())
                + ", \"throughput_per_s\": " + num(f.throughput()) + ", \"requests_per_op\": "
                + num(f.requestsPerOp()) + ", \"packets_per_op\": " + num(f.packetsPerOp()) + ", \"cpu_us_per_op\": "
                + num(f.cpuMicrosPerOp()) + ", \"extra\": "
                + num(f.extra()) + "}";
    }

    static String num(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return "null";
        }
        return String.format(Locale.ROOT, "%.6f", v).replaceAll("0+$", "").replaceAll("\\.$", "");
    }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    private static String strings(List<String> items) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < items.size(); i++) {
            b.append(i == 0 ? "" : ", ").append(str(items.get(i)));
        }
        return b.append(']').toString();
    }
}
