package io.coord.bench.perf;

import java.util.List;

/** One numbered scenario of the issue: runs coord and its Curator counterpart, interleaved, and returns its rows. */
public interface Scenario {
    String id();

    String title();

    List<Row> run(BenchContext ctx) throws Exception;
}
