package io.coord.bench.demo;

import io.coord.bench.Safety;
import io.coord.core.Lease;
import io.coord.mutex.ReentrantMutex;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;

/**
 * 100 buyers race for 10 items. The stock count lives in a znode; each buyer takes the mutex, reads the count and
 * writes it back one lower in a transaction that first checks its lease's node still exists, so even a buyer whose
 * lease had silently died could not sell an item twice.
 */
final class ShopDemo implements DemoScenario {
    private static final int BUYERS = 100;
    private static final int ITEMS = 10;
    private static final int SESSIONS = 5;
    private static final Duration PATIENCE = Duration.ofSeconds(30);

    @Override
    public String title() {
        return "1. Shop: " + BUYERS + " buyers race for " + ITEMS + " items behind one ReentrantMutex";
    }

    @Override
    public Verdict run(DemoContext ctx) throws Exception {
        List<CuratorFramework> clients = ctx.clients(SESSIONS);
        String stock = ctx.path("shop/stock");
        String lock = ctx.path("shop/lock");
        clients.get(0).create().creatingParentsIfNeeded().forPath(stock, bytes(ITEMS));
        ctx.say("%d items in stock, %d buyers on %d sessions, all released at once", ITEMS, BUYERS, SESSIONS);

        Safety safety = new Safety();
        Safety.Guard till = safety.guard("shop till", 1);
        AtomicInteger sold = new AtomicInteger();
        AtomicInteger turnedAway = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> buyers = new ArrayList<>();
        for (int b = 1; b <= BUYERS; b++) {
            int buyer = b;
            CuratorFramework client = clients.get(b % SESSIONS);
            ReentrantMutex mutex = new ReentrantMutex(client, lock, "buyer-" + b);
            Thread t = new Thread(
                    () -> {
                        try {
                            start.await();
                            if (!mutex.acquire(PATIENCE)) {
                                safety.check(false, "buyer " + buyer + " never reached the till");
                                return;
                            }
                            try {
                                Lease lease = mutex.lease();
                                till.enter(lease.fencingToken());
                                try {
                                    buy(ctx, client, lease, stock, buyer, sold, turnedAway);
                                } finally {
                                    till.exit();
                                }
                            } finally {
                                mutex.release();
                            }
                        } catch (Exception e) {
                            safety.check(false, "buyer " + buyer + " failed: " + e);
                        }
                    },
                    "buyer-" + b);
            buyers.add(t);
            t.start();
        }
        start.countDown();
        for (Thread t : buyers) {
            t.join(PATIENCE.toMillis() * 2);
        }
        int left = number(clients.get(0).getData().forPath(stock));
        ctx.say("%d buyers found the shelf empty", turnedAway.get());
        boolean pass = safety.violations().isEmpty()
                && sold.get() == ITEMS
                && left == 0
                && turnedAway.get() == BUYERS - ITEMS
                && till.peak() == 1;
        String summary = sold.get() + " sold, " + turnedAway.get() + " turned away, " + left + " left, at most "
                + till.peak() + " buyer at the till, fencing tokens rising";
        return Verdict.of("shop", pass, pass ? summary : summary + "; " + safety.violations());
    }

    private static void buy(
            DemoContext ctx,
            CuratorFramework client,
            Lease lease,
            String stock,
            int buyer,
            AtomicInteger sold,
            AtomicInteger turnedAway)
            throws Exception {
        int left = number(client.getData().forPath(stock));
        if (left <= 0) {
            turnedAway.incrementAndGet();
            return;
        }
        // Fenced write: applied only if our lock node still exists at the moment the server runs it.
        client.transaction()
                .forOperations(
                        lease.fencedCheck(), client.transactionOp().setData().forPath(stock, bytes(left - 1)));
        int n = sold.incrementAndGet();
        ctx.say("buyer %3d bought item %2d of %d (fencing token 0x%x)", buyer, n, ITEMS, lease.fencingToken());
    }

    private static byte[] bytes(int n) {
        return Integer.toString(n).getBytes(StandardCharsets.UTF_8);
    }

    private static int number(byte[] data) {
        return Integer.parseInt(new String(data, StandardCharsets.UTF_8));
    }
}
