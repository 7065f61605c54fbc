package io.coord.testkit;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * What the test logger (slf4j-simple, which looks {@code System.err} up at every line) writes while this is open: the
 * log a user of the module would see. The tests log WARN and up.
 */
public final class CapturedLog implements AutoCloseable {
    private final PrintStream original = System.err;
    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();

    public CapturedLog() {
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    }

    /** The lines written so far by loggers under {@code prefix}. */
    public List<String> linesOf(String prefix) {
        return captured.toString(StandardCharsets.UTF_8)
                .lines()
                .filter(line -> line.contains(" " + prefix))
                .toList();
    }

    @Override
    public void close() {
        System.err.flush();
        System.setErr(original);
    }
}
