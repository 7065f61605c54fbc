package io.coord.bench.perf;

import io.coord.bench.Args;
import io.coord.bench.Ensemble;
import io.coord.bench.Progress;
import io.coord.bench.Safety;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/** The {@code bench} command: runs every scenario, prints the table, writes {@code target/bench/}. */
public final class Bench {
    static final Path OUTPUT = Path.of("target", "bench");
    /**
     * How long coord's views outlive their last use during a run, unless {@code -Dcoord.view.linger} is given. Rounds
     * alternate which side runs first, so two of coord's windows can have two of Curator's between them, longer than
     * the default linger of 2 s: every coord window then began by priming its views again (at 32 sessions with 1 ms
     * round trips, 3.1–3.4 requests per acquisition instead of 2.00). Both sides are measured in steady use.
     */
    static final String VIEW_LINGER = "PT10S";

    private static final String VIEW_LINGER_PROPERTY = "coord.view.linger";

    private Bench() {}

    /** Returns the exit status: 1 on a safety violation or a scenario that could not finish, else 0. */
    public static int run(Args args, String commandLine, Progress progress, PrintStream out) throws Exception {
        boolean lingerSet = System.getProperty(VIEW_LINGER_PROPERTY) == null;
        if (lingerSet) {
            System.setProperty(VIEW_LINGER_PROPERTY, VIEW_LINGER); // read when coord first meets each client
        }
        try {
            return runWithViewLinger(args, commandLine, progress, out);
        } finally {
            if (lingerSet) {
                System.clearProperty(VIEW_LINGER_PROPERTY);
            }
        }
    }

    private static int runWithViewLinger(Args args, String commandLine, Progress progress, PrintStream out)
            throws Exception {
        Plan plan = Plan.of(args.quick());
        String date = OffsetDateTime.now().truncatedTo(ChronoUnit.SECONDS).toString();
        Safety safety = new Safety();
        List<Row> rows = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        Set<String> attempted = new TreeSet<>();
        try (Ensemble ensemble = Ensemble.start(args.connect(), args.rtt(), progress)) {
            BenchContext ctx = new BenchContext(ensemble, safety, progress, plan);
            if (ctx.counters().requestsReceived().isEmpty()) {
                notes.add("the servers refused the four-letter word cons (4lw.commands.whitelist), so req/op is n/a");
            }
            args.rtt()
                    .ifPresent(rtt -> notes.add("all client traffic went through the delaying proxy: +"
                            + Format.duration(rtt) + " per round trip, half each way"));
            if (ensemble.skipsFsync()) {
                notes.add("the embedded servers run with zookeeper.forceSync=no (add -Dzookeeper.forceSync=yes to keep"
                        + " fsync): their data is thrown away, and fsync on this disk adds noise to both sides alike");
            }
            for (Scenario scenario : Scenarios.all()) {
                if (!args.only().isEmpty() && !args.only().contains(scenario.id())) {
                    continue;
                }
                attempted.add(scenario.id());
                progress.step(
                        "scenario " + scenario.id() + " of " + Scenarios.all().size() + ": " + scenario.title());
                try {
                    rows.addAll(scenario.run(ctx));
                } catch (InterruptedException e) {
                    throw e; // the user stopped the run; the rest would be interrupted too
                } catch (Exception e) {
                    errors.add("scenario " + scenario.id() + " failed: " + e);
                    progress.step("scenario " + scenario.id() + " failed: " + e);
                }
            }
            notes.addAll(ctx.notes());
            ensemble.removeRunData(ctx.root(), progress);
        }
        notes.add("coord's views linger " + System.getProperty(VIEW_LINGER_PROPERTY) + " after their last use ("
                + VIEW_LINGER_PROPERTY
                + "; the default is 2 s), longer than the other side's turns between two of"
                + " coord's windows: a client idle past its linger goes without a view on its next use (3"
                + " requests uncontended) and primes a new one on the use after");
        notes.add(
                "coord's release returns once its delete is sent; ZooKeeper runs a session's requests in order, so the"
                        + " session's next request still sees it");
        notes.add(
                "req/op is the servers' own count of requests received in the window (cons: recved per session), session"
                        + " pings included; the sessions ask for " + Ensemble.LONG_SESSION_TIMEOUT.toSeconds()
                        + " s, so one that waits its turn seldom pings");
        notes.add("pkts/op is what the servers sent to clients in the window (srvr: Sent), replies and watch"
                + " notifications alike: a change a view hears costs one packet per client with a view on the path,"
                + " which req/op does not show; a transaction counts as one request and one packet");
        notes.add("cpu/op is the CPU time the bench's process used in the window, per op, every thread counted: with"
                + " the embedded ensemble that is the servers', the proxy's and the clients' alike, what an op costs"
                + " the machine; with --connect, the clients' alone");
        Results results = new Results(
                date,
                machine(),
                commandLine,
                rows,
                Targets.evaluate(rows, link(args), attempted),
                notes,
                safety.violations(),
                errors);
        out.print(Report.console(results));
        write(results, progress);
        return results.failed() ? 1 : 0;
    }

    /** How the clients reach the servers, as scenario 1's target names it. */
    static String link(Args args) {
        if (args.rtt().isPresent()) {
            return "rtt " + Format.duration(args.rtt().get());
        }
        return args.connect().isPresent() ? "external ensemble" : "loopback";
    }

    static String machine() {
        return String.format(
                Locale.ROOT,
                "%d cores, Java %s, %s %s",
                Runtime.getRuntime().availableProcessors(),
                Runtime.version(),
                System.getProperty("os.name"),
                System.getProperty("os.arch"));
    }

    private static void write(Results results, Progress progress) throws IOException {
        Files.createDirectories(OUTPUT);
        Path json = OUTPUT.resolve("results.json");
        Path md = OUTPUT.resolve("results.md");
        Files.writeString(json, JsonReport.render(results), StandardCharsets.UTF_8);
        Files.writeString(md, Report.markdown(results), StandardCharsets.UTF_8);
        progress.step("wrote " + json.toAbsolutePath() + " and " + md.getFileName());
    }
}
