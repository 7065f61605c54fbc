package io.coord.bench;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The parsed command line. Parsing is strict: anything unknown is a {@link UsageException}, never ignored. */
public record Args(
        Command command,
        Optional<List<String>> connect,
        Optional<Duration> rtt,
        boolean quick,
        Set<String> only,
        Optional<Path> jfr) {

    public enum Command {
        DEMO,
        BENCH,
        HELP
    }

    // Beyond this a "round trip" is an outage, and the proxy would only make every session time out.
    static final Duration MAX_RTT = Duration.ofSeconds(1);

    private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|µs|ms|s)");
    private static final Pattern HOST_PORT = Pattern.compile("([^:,/\\s]+|\\[[0-9a-fA-F:.]+]):(\\d{1,5})");

    public static final String USAGE = """
            usage: java -jar coord-bench.jar <command> [options]

            commands:
              demo                 run each primitive once against an embedded 3-node ensemble and check it
              bench                the same work through coord and Curator's recipes, side by side
              help                 print this text (also --help, -h)

            options:
              --connect h:p,...    use an existing ensemble instead of the embedded one
              --rtt <duration>     bench only: route client traffic through a delaying proxy (e.g. 1ms, 500us)
              --quick              bench only: fewer rounds and smaller sizes, under 2 minutes
              --only <n,...>       bench only: run just these scenarios, e.g. --only 1,3
              --jfr <file>         record the run with Flight Recorder into <file>, coord's io.coord.* events
                                   included; read it with 'jfr print --events io.coord.Acquire <file>'
                                   or open it in JDK Mission Control

            exit status: 0 all checks passed, 1 a check or safety invariant failed, 2 bad arguments
            """;

    public static Args parse(String... argv) throws UsageException {
        Command command = null;
        List<String> connect = null;
        Duration rtt = null;
        boolean quick = false;
        Set<String> only = Set.of();
        Path jfr = null;
        Set<String> given = new HashSet<>();
        for (int i = 0; i < argv.length; i++) {
            String arg = argv[i];
            if (arg.startsWith("--") && !given.add(arg)) {
                throw new UsageException(arg + " given twice");
            }
            switch (arg) {
                case "--help", "-h", "help" -> command = Command.HELP;
                case "--quick" -> quick = true;
                case "--connect" -> connect = hosts(value(argv, ++i, arg));
                case "--rtt" -> rtt = duration(value(argv, ++i, arg));
                case "--only" -> only = scenarios(value(argv, ++i, arg));
                case "--jfr" -> jfr = recordingFile(value(argv, ++i, arg));
                case "demo", "bench" -> {
                    if (command != null && command != Command.HELP) {
                        throw new UsageException("only one command, got '"
                                + command.name().toLowerCase(Locale.ROOT) + "' and '" + arg + "'");
                    }
                    if (command == null) {
                        command = arg.equals("demo") ? Command.DEMO : Command.BENCH;
                    }
                }
                default ->
                    throw new UsageException(
                            arg.startsWith("-") ? "unknown option '" + arg + "'" : "unknown command '" + arg + "'");
            }
        }
        if (command == null) {
            throw new UsageException("no command given: expected demo, bench or --help");
        }
        if (command == Command.DEMO && rtt != null) {
            throw new UsageException("--rtt applies to bench only");
        }
        if (command == Command.DEMO && quick) {
            throw new UsageException("--quick applies to bench only");
        }
        if (command == Command.DEMO && !only.isEmpty()) {
            throw new UsageException("--only applies to bench only");
        }
        return new Args(
                command, Optional.ofNullable(connect), Optional.ofNullable(rtt), quick, only, Optional.ofNullable(jfr));
    }

    /**
     * Parses {@code 1ms}, {@code 0.5ms}, {@code 500us}, {@code 2s} or {@code 250ns}. Bare numbers are refused: a
     * round trip of "1" could mean anything.
     */
    static Duration duration(String text) throws UsageException {
        Matcher m = DURATION.matcher(text.trim());
        if (!m.matches()) {
            throw new UsageException("bad duration '" + text + "': expected a number and a unit, e.g. 1ms or 500us");
        }
        BigDecimal amount = new BigDecimal(m.group(1));
        BigDecimal nanosPerUnit = switch (m.group(2)) {
            case "ns" -> BigDecimal.ONE;
            case "us", "µs" -> BigDecimal.valueOf(1_000);
            case "ms" -> BigDecimal.valueOf(1_000_000);
            default -> BigDecimal.valueOf(1_000_000_000);
        };
        BigDecimal nanos = amount.multiply(nanosPerUnit);
        if (nanos.signum() <= 0 || nanos.compareTo(BigDecimal.valueOf(MAX_RTT.toNanos())) > 0) {
            throw new UsageException(
                    "bad duration '" + text + "': must be above 0 and at most " + MAX_RTT.toMillis() + "ms");
        }
        if (nanos.stripTrailingZeros().scale() > 0) {
            throw new UsageException("bad duration '" + text + "': not a whole number of nanoseconds");
        }
        return Duration.ofNanos(nanos.longValueExact());
    }

    /** Splits {@code host:port,host:port}; a chroot suffix is refused: the bench writes its own paths from the root. */
    static List<String> hosts(String text) throws UsageException {
        List<String> hosts = new ArrayList<>();
        for (String part : text.split(",", -1)) {
            Matcher m = HOST_PORT.matcher(part.trim());
            if (!m.matches()) {
                throw new UsageException("bad --connect entry '" + part + "': expected host:port");
            }
            int port = Integer.parseInt(m.group(2));
            if (port < 1 || port > 65_535) {
                throw new UsageException("bad --connect port in '" + part + "': must be 1..65535");
            }
            hosts.add(part.trim());
        }
        return List.copyOf(hosts);
    }

    /** Parses {@code 1,3,9}: scenario numbers 1 to 9. */
    static Set<String> scenarios(String text) throws UsageException {
        Set<String> ids = new TreeSet<>();
        for (String part : text.split(",", -1)) {
            String id = part.trim();
            if (!id.matches("[1-9]")) {
                throw new UsageException("bad --only entry '" + part + "': expected scenario numbers 1 to 9");
            }
            ids.add(id);
        }
        return Collections.unmodifiableSet(ids);
    }

    /** A file the recording can be written to: not a directory, in a directory that exists. */
    static Path recordingFile(String text) throws UsageException {
        Path file;
        try {
            file = Path.of(text).toAbsolutePath();
        } catch (InvalidPathException e) {
            throw new UsageException("bad --jfr file '" + text + "': " + e.getMessage());
        }
        if (Files.isDirectory(file)) {
            throw new UsageException("bad --jfr file '" + text + "': it is a directory");
        }
        if (!Files.isDirectory(file.getParent())) {
            throw new UsageException("bad --jfr file '" + text + "': no directory " + file.getParent());
        }
        return file;
    }

    private static String value(String[] argv, int i, String option) throws UsageException {
        if (i >= argv.length || argv[i].startsWith("--")) {
            throw new UsageException(option + " needs a value");
        }
        return argv[i];
    }
}
