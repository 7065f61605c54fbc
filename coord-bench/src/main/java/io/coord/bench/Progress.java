package io.coord.bench;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Progress lines, on stderr so that stdout carries only results and can be redirected to a file as it is. Each line
 * carries the seconds since start, so a stall shows.
 */
public final class Progress {
    private final PrintStream out;
    private final long startNanos = System.nanoTime();

    public Progress(PrintStream out) {
        this.out = out;
    }

    public void step(String text) {
        double seconds = (System.nanoTime() - startNanos) / 1e9;
        out.printf(Locale.ROOT, "  [%6.1fs] %s%n", seconds, text);
        out.flush();
    }
}
