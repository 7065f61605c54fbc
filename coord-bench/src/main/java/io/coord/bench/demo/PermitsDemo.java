package io.coord.bench.demo;

import io.coord.bench.Safety;
import io.coord.core.Lease;
import io.coord.semaphore.DistributedSemaphore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;

/** Ten workers share three permits of one DistributedSemaphore, as a pool of licences or connections would be. */
final class PermitsDemo implements DemoScenario {
    private static final int PERMITS = 3;
    private static final int WORKERS = 10;
    private static final int SESSIONS = 3;
    // Each job's simulated work: long enough that the workers pile up behind the three permits, which is the point.
    private static final long WORK_MILLIS = 150;
    private static final Duration PATIENCE = Duration.ofSeconds(30);

    @Override
    public String title() {
        return "3. " + PERMITS + " permits shared among " + WORKERS + " workers (DistributedSemaphore)";
    }

    @Override
    public Verdict run(DemoContext ctx) throws Exception {
        List<CuratorFramework> clients = ctx.clients(SESSIONS);
        String path = ctx.path("licences");
        Safety safety = new Safety();
        Safety.Guard inUse = safety.guard("licences", PERMITS);
        AtomicInteger done = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        for (int w = 1; w <= WORKERS; w++) {
            int worker = w;
            DistributedSemaphore semaphore = new DistributedSemaphore(clients.get(w % SESSIONS), path, PERMITS);
            Thread t = new Thread(
                    () -> {
                        try {
                            start.await();
                            Optional<Lease> permit = semaphore.tryAcquire(1, PATIENCE);
                            if (permit.isEmpty()) {
                                safety.check(false, "worker " + worker + " never got a permit");
                                return;
                            }
                            try (Lease lease = permit.get()) {
                                inUse.enter();
                                ctx.say(
                                        "worker %2d got a permit (%d of %d in use, node %s)",
                                        worker,
                                        inUse.holders(),
                                        PERMITS,
                                        lease.path().substring(path.length() + 1));
                                TimeUnit.MILLISECONDS.sleep(WORK_MILLIS);
                                inUse.exit();
                            }
                            done.incrementAndGet();
                        } catch (Exception e) {
                            safety.check(false, "worker " + worker + " failed: " + e);
                        }
                    },
                    "worker-" + w);
            workers.add(t);
            t.start();
        }
        start.countDown();
        for (Thread t : workers) {
            t.join(PATIENCE.toMillis() * 2);
        }
        boolean pass = safety.violations().isEmpty() && done.get() == WORKERS && inUse.peak() <= PERMITS;
        String summary =
                done.get() + " jobs done, never more than " + inUse.peak() + " of " + PERMITS + " permits in use";
        return Verdict.of("permits", pass, pass ? summary : summary + "; " + safety.violations());
    }
}
