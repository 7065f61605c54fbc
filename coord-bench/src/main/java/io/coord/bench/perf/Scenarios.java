package io.coord.bench.perf;

import java.util.List;

/** The bench's scenarios, in the order. */
final class Scenarios {
    private Scenarios() {}

    static List<Scenario> all() {
        return List.of(
                new UncontendedMutex(),
                new ContendedMutex(),
                new HandOff(),
                new ReadWrite(),
                new Semaphore(),
                new QueueDrain(CoordQueues::create),
                new Failover(),
                new AsyncScale(),
                new HerdCheck());
    }
}
