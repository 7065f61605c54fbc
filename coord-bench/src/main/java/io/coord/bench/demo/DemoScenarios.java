package io.coord.bench.demo;

import java.util.List;

/** The demo's stories, in order; the failover kills a server, so it comes last. */
final class DemoScenarios {
    private DemoScenarios() {}

    static List<DemoScenario> all() {
        return List.of(
                new ShopDemo(), new ReadersWritersDemo(), new PermitsDemo(), new QueueDemo(), new FailoverDemo());
    }
}
