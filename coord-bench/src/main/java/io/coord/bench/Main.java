package io.coord.bench;

import io.coord.bench.demo.Demo;
import io.coord.bench.perf.Bench;
import java.io.PrintStream;
import java.util.Locale;

/** {@code java -jar coord-bench.jar demo|bench [options]}; see {@link Args#USAGE}. */
public final class Main {
    private Main() {}

    public static void main(String[] argv) {
        // ZooKeeper's and Curator's threads are not all daemons; the status is the program's answer, so exit with it.
        System.exit(run(argv, System.out, System.err));
    }

    static int run(String[] argv, PrintStream out, PrintStream err) {
        Args args;
        try {
            args = Args.parse(argv);
        } catch (UsageException e) {
            err.println("coord-bench: " + e.getMessage());
            err.println("run 'java -jar coord-bench.jar --help' for usage");
            return 2;
        }
        if (args.command() == Args.Command.HELP) {
            out.print(Args.USAGE);
            return 0;
        }
        // Read by the embedded servers when they start: four-letter words feed req/op and the bench's readiness checks,
        // and the admin server would need a port of its own.
        setDefault("zookeeper.4lw.commands.whitelist", "*");
        setDefault("zookeeper.admin.enableServer", "false");
        Progress progress = new Progress(err);
        String commandLine = "coord-bench " + String.join(" ", argv);
        FlightRecording recording = null;
        try {
            if (args.jfr().isPresent()) {
                recording = FlightRecording.start(args.jfr().get(), err);
            }
            return switch (args.command()) {
                case DEMO -> Demo.run(args, progress, out);
                case BENCH -> Bench.run(args, commandLine, progress, out);
                case HELP -> 0;
            };
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("coord-bench: interrupted");
            return 1;
        } catch (Exception e) {
            err.println("coord-bench: " + args.command().name().toLowerCase(Locale.ROOT) + " failed: " + e);
            e.printStackTrace(err);
            return 1;
        } finally {
            if (recording != null) {
                recording.close(); // whatever the run's outcome, what was recorded is written
            }
        }
    }

    private static void setDefault(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }
}
