package io.coord.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ArgsTest {

    @Test
    void demoNeedsNothingElse() throws UsageException {
        Args args = Args.parse("demo");
        assertEquals(Args.Command.DEMO, args.command());
        assertEquals(Optional.empty(), args.connect());
        assertEquals(Optional.empty(), args.rtt());
        assertFalse(args.quick());
        assertEquals(Optional.empty(), args.jfr());
    }

    @Test
    void benchTakesEveryOptionInAnyOrder() throws UsageException {
        Args args = Args.parse("--quick", "bench", "--rtt", "1ms", "--connect", "zk1:2181,zk2:2182", "--only", "3,1");
        assertEquals(Args.Command.BENCH, args.command());
        assertTrue(args.quick());
        assertEquals(Optional.of(Duration.ofMillis(1)), args.rtt());
        assertEquals(Optional.of(List.of("zk1:2181", "zk2:2182")), args.connect());
        assertEquals(Set.of("1", "3"), args.only());
    }

    @Test
    void aRecordingFileIsTakenForEitherCommand(@TempDir Path dir) throws UsageException {
        Path file = dir.resolve("run.jfr");
        assertEquals(
                Optional.of(file), Args.parse("bench", "--jfr", file.toString()).jfr());
        assertEquals(
                Optional.of(file), Args.parse("--jfr", file.toString(), "demo").jfr());
    }

    @Test
    void aRecordingFileMustBeAFileInADirectoryThatExists(@TempDir Path dir) {
        for (String bad : List.of(dir.toString(), dir.resolve("missing/run.jfr").toString())) {
            UsageException e = assertThrows(UsageException.class, () -> Args.parse("bench", "--jfr", bad), bad);
            assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
        }
        assertThrows(UsageException.class, () -> Args.parse("bench", "--jfr"));
    }

    @Test
    void helpWinsOverACommand() throws UsageException {
        assertEquals(Args.Command.HELP, Args.parse("bench", "--help").command());
        assertEquals(Args.Command.HELP, Args.parse("-h").command());
    }

    @Test
    void durationsCarryTheirUnit() throws UsageException {
        assertEquals(Duration.ofNanos(500_000), Args.duration("500us"));
        assertEquals(Duration.ofNanos(500_000), Args.duration("0.5ms"));
        assertEquals(Duration.ofMillis(2), Args.duration("2ms"));
        assertEquals(Duration.ofSeconds(1), Args.duration("1s"));
        assertEquals(Duration.ofNanos(250), Args.duration("250ns"));
    }

    @Test
    void badDurationsAreRefusedWithTheValue() {
        for (String bad : List.of(
                "1",
                "ms",
                "1 ms",
                "-1ms",
                "0ms",
                "2s",
                "1h",
                "fast",
                "10000000000s",
                "18446744073.709551617s",
                "1.5ns")) {
            UsageException e = assertThrows(UsageException.class, () -> Args.parse("bench", "--rtt", bad), bad);
            assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
        }
    }

    @Test
    void anOptionGivenTwiceIsRefusedRatherThanTheFirstValueDropped() {
        assertEquals(
                "--only given twice",
                assertThrows(UsageException.class, () -> Args.parse("bench", "--only", "1", "--only", "3"))
                        .getMessage());
        assertEquals(
                "--rtt given twice",
                assertThrows(UsageException.class, () -> Args.parse("bench", "--rtt", "1ms", "--rtt", "2ms"))
                        .getMessage());
    }

    @Test
    void unknownCommandsAndOptionsAreNamed() {
        assertEquals(
                "unknown command 'benchmark'",
                assertThrows(UsageException.class, () -> Args.parse("benchmark"))
                        .getMessage());
        assertEquals(
                "unknown option '--fast'",
                assertThrows(UsageException.class, () -> Args.parse("bench", "--fast"))
                        .getMessage());
    }

    @Test
    void aCommandIsRequiredAndOnlyOne() {
        assertThrows(UsageException.class, () -> Args.parse());
        assertThrows(UsageException.class, () -> Args.parse("--quick"));
        assertThrows(UsageException.class, () -> Args.parse("demo", "bench"));
    }

    @Test
    void optionsNeedTheirValues() {
        assertEquals(
                "--rtt needs a value",
                assertThrows(UsageException.class, () -> Args.parse("bench", "--rtt"))
                        .getMessage());
        assertEquals(
                "--connect needs a value",
                assertThrows(UsageException.class, () -> Args.parse("bench", "--connect", "--quick"))
                        .getMessage());
    }

    @Test
    void benchOnlyOptionsAreRefusedForTheDemo() {
        assertThrows(UsageException.class, () -> Args.parse("demo", "--rtt", "1ms"));
        assertThrows(UsageException.class, () -> Args.parse("demo", "--quick"));
        assertThrows(UsageException.class, () -> Args.parse("demo", "--only", "1"));
    }

    @Test
    void connectStringsAreHostPortPairs() {
        for (String bad : List.of("zk1", "zk1:", "zk1:2181/chroot", "zk1:99999", "zk1:2181,", ":2181")) {
            assertThrows(UsageException.class, () -> Args.parse("bench", "--connect", bad), bad);
        }
    }

    @Test
    void scenarioNumbersRunFromOneToEight() {
        assertThrows(UsageException.class, () -> Args.parse("bench", "--only", "10"));
        assertThrows(UsageException.class, () -> Args.parse("bench", "--only", "1,,2"));
    }
}
