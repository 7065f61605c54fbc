package io.coord.bench.demo;

import io.coord.queue.Claim;
import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;

/**
 * A producer and two consumers share a DistributedQueue with at-least-once claims. One consumer claims an order and
 * dies before acknowledging it: its session ends, the claim dies with it, and the other consumer gets the order.
 */
final class QueueDemo implements DemoScenario {
    private static final int ORDERS = 12;
    private static final int HANDLED_BEFORE_CRASH = 3;
    private static final Duration CLAIM_WAIT = Duration.ofSeconds(1);
    private static final Duration PATIENCE = Duration.ofSeconds(30);

    @Override
    public String title() {
        return "4. A producer and two consumers on a DistributedQueue; one consumer dies holding a claim";
    }

    @Override
    public Verdict run(DemoContext ctx) throws Exception {
        List<CuratorFramework> clients = ctx.clients(3);
        String path = ctx.path("orders");
        DistributedQueue<String> producer = queue(clients.get(0), path);
        DistributedQueue<String> alice = queue(clients.get(1), path);
        DistributedQueue<String> bob = queue(clients.get(2), path);

        for (int i = 1; i <= ORDERS; i++) {
            producer.put("order-" + i);
        }
        ctx.say("producer queued order-1 .. order-%d", ORDERS);

        Map<String, String> handledBy = new ConcurrentHashMap<>();
        Map<String, Integer> handledTimes = new ConcurrentHashMap<>();
        AtomicReference<String> failure = new AtomicReference<>();
        AtomicReference<String> abandoned = new AtomicReference<>();
        Thread bobThread = new Thread(
                () -> {
                    long deadline = System.nanoTime() + PATIENCE.toNanos();
                    try {
                        while (handledBy.size() < ORDERS && System.nanoTime() < deadline) {
                            Optional<Claim<String>> claim = bob.claim(CLAIM_WAIT);
                            if (claim.isEmpty()) {
                                continue; // the rest are claimed by someone else, for now
                            }
                            try (Claim<String> c = claim.get()) {
                                String order = c.item();
                                if (c.ack()) {
                                    handle(order, "bob", handledBy, handledTimes);
                                    ctx.say(
                                            order.equals(abandoned.get())
                                                    ? "bob got %s back after alice's session ended, and handled it"
                                                    : "bob handled %s",
                                            order);
                                }
                            }
                        }
                    } catch (Exception e) {
                        failure.set("bob failed: " + e);
                    }
                },
                "bob");
        bobThread.start();

        for (int i = 0; i < HANDLED_BEFORE_CRASH; i++) {
            Optional<Claim<String>> claim = alice.claim(CLAIM_WAIT);
            if (claim.isPresent()) {
                try (Claim<String> c = claim.get()) {
                    if (c.ack()) {
                        handle(c.item(), "alice", handledBy, handledTimes);
                        ctx.say("alice handled %s", c.item());
                    }
                }
            }
        }
        Optional<Claim<String>> lastClaim = alice.claim(PATIENCE);
        if (lastClaim.isPresent()) {
            // Neither acked nor closed: the process "dies" with the claim open, and only its session's end frees it.
            abandoned.set(lastClaim.get().item());
            ctx.say("alice claimed %s and crashed before acknowledging it", abandoned.get());
        }
        clients.get(1).close();

        bobThread.join(PATIENCE.toMillis() * 2);
        long duplicates = handledTimes.values().stream().filter(n -> n > 1).count();
        boolean redelivered = abandoned.get() != null && "bob".equals(handledBy.get(abandoned.get()));
        boolean pass = failure.get() == null && handledBy.size() == ORDERS && duplicates == 0 && redelivered;
        long byAlice = handledBy.values().stream().filter("alice"::equals).count();
        String summary = handledBy.size() + "/" + ORDERS + " orders handled (alice " + byAlice + ", bob "
                + (handledBy.size() - byAlice) + "), none twice, the abandoned " + abandoned.get()
                + (redelivered ? " went to bob" : " was NOT redelivered");
        return Verdict.of("queue", pass, failure.get() == null ? summary : summary + "; " + failure.get());
    }

    private static DistributedQueue<String> queue(CuratorFramework client, String path) {
        return DistributedQueue.builder(client, path, QueueSerializer.utf8())
                .capacity(100)
                .build();
    }

    private static void handle(
            String order, String who, Map<String, String> handledBy, Map<String, Integer> handledTimes) {
        handledBy.put(order, who);
        handledTimes.merge(order, 1, Integer::sum);
    }
}
