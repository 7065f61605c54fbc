package io.coord.bench.demo;

/** One story of the demo: it narrates as it goes and ends with a verdict its checks decide. */
interface DemoScenario {
    String title();

    Verdict run(DemoContext ctx) throws Exception;
}
