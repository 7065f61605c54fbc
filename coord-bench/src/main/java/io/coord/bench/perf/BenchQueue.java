package io.coord.bench.perf;

import java.io.IOException;
import java.util.List;

/** One queue implementation under test in scenario 6, on a fresh path. */
interface BenchQueue extends AutoCloseable {
    String name();

    /** Adds one item; the sample times each call. */
    void offer(byte[] item) throws Exception;

    /** Returns once every offered item is stored (Curator's DistributedQueue writes in the background). */
    void flush() throws Exception;

    /** Takes {@code count} items, recording the time each one took into {@code sample}, and returns them in order. */
    List<byte[]> drain(int count, Sample sample) throws Exception;

    @Override
    void close() throws IOException;

    /** Builds a queue for one measured offer-then-drain on {@code path}. */
    @FunctionalInterface
    interface Factory {
        BenchQueue create(String path) throws Exception;
    }
}
