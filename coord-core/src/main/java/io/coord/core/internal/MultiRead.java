package io.coord.core.internal;

import io.coord.core.CoordinationException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.RetryLoop;
import org.apache.curator.drivers.OperationTrace;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;

/**
 * Reads the data of many znodes in one request: ZooKeeper's read-only multi (3.6+). Curator 5.9 does not wrap it, so
 * it goes through the client's ZooKeeper handle, with the namespace applied here, and is reported to Curator's tracer
 * like Curator's own requests. Each read succeeds or fails on its own: a missing znode is an error result in its
 * place. A read lost with the connection is sent again once connected, since reads are safe to repeat, unless its
 * caller does not wait for the connection; a caller that waits on its own thread reads with {@link #readRetrying},
 * which gives up when the client's retry policy does.
 *
 * <p>A server before 3.6 answers UNIMPLEMENTED (and drops the connection), or seems to lose the request with the
 * connection (see {@link ServerSupport#answeredAsOlderServer}): from then on the client reads such batches node by node,
 * with the same results, one request per node.
 *
 * <p>A reply must fit the client's {@code jute.maxbuffer}: the client takes a bigger one for a broken connection,
 * reconnects, and the read, sent again, would break it again for ever: one lost twice running is read in halves.
 * {@link #readRetrying} splits by the most each node can hold, and into smaller requests after each loss.
 */
public final class MultiRead {
    private static final int DEFAULT_MAX_BUFFER = 0xfffff;
    // A reply's header, vector length and framing, with room to spare.
    private static final int REPLY_OVERHEAD = 1024;
    // One getData result in a multi-read reply besides its data: the result header, length prefix and Stat.
    private static final int READ_RESULT_OVERHEAD = 128;

    private MultiRead() {}

    /** {@code jute.maxbuffer} as this JVM's clients read it: the largest request or reply ZooKeeper takes. */
    public static int maxBuffer() {
        return Integer.getInteger("jute.maxbuffer", DEFAULT_MAX_BUFFER);
    }

    /** How many reads one reply can carry when no node holds more than {@code maxDataBytes}. */
    public static int readsPerReply(int maxDataBytes) {
        return Math.max(1, (maxBuffer() - REPLY_OVERHEAD) / (maxDataBytes + READ_RESULT_OVERHEAD));
    }

    /**
     * The data of {@code paths}, as {@link #read(ClientContext, List, boolean)} gives it, waited for on the calling
     * thread as Curator's own synchronous reads are: a read lost with the connection is sent again as often as the
     * client's retry policy allows, and then fails. It is sent in as many requests as it takes for each reply to fit
     * when no node holds more than {@code maxDataBytes}, and after each loss in smaller ones, in case a reply was too
     * big after all.
     *
     * @throws CoordinationException naming {@code doing} and {@code path} if it fails, or the client closes
     */
    public static List<OpResult> readRetrying(
            ClientContext context, List<String> paths, int maxDataBytes, String doing, String path)
            throws InterruptedException {
        int perReply = readsPerReply(maxDataBytes);
        // A loop of its own, not RetryLoop.callWithRetry: that one joins a retry loop the caller's thread runs
        // already, which a call of Curator's made before may have finished, and then sends nothing.
        RetryLoop retries = context.client().getZookeeperClient().newRetryLoop();
        try {
            while (true) {
                CompletableFuture<List<OpResult>> answer = readInRequests(context, paths, perReply);
                try {
                    return answer.get();
                } catch (ExecutionException e) {
                    perReply = Math.max(1, perReply / 2);
                    // Throws it unless the client's retry policy allows another try, after its sleep.
                    retries.takeException(e.getCause() instanceof Exception cause ? cause : e);
                } finally {
                    answer.cancel(false); // an interrupted wait leaves nothing to complete later
                }
            }
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            throw BackgroundRequests.failure(doing, path, e);
        }
    }

    /** In requests of at most {@code perReply} reads, sent together; a read lost with the connection fails. */
    private static CompletableFuture<List<OpResult>> readInRequests(
            ClientContext context, List<String> paths, int perReply) {
        if (paths.size() <= perReply) {
            return read(context, paths, false);
        }
        List<CompletableFuture<List<OpResult>>> parts = new ArrayList<>();
        for (int from = 0; from < paths.size(); from += perReply) {
            parts.add(read(context, paths.subList(from, Math.min(paths.size(), from + perReply)), false));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(done -> {
            List<OpResult> all = new ArrayList<>(paths.size());
            parts.forEach(part -> all.addAll(part.join()));
            return all;
        });
    }

    /**
     * The data of {@code paths} (named as the client names them, without its namespace), in their order. Fails with
     * the client's closed error if the client closes first, or with the server's error for the batch as a whole. A
     * read lost with the connection is sent again once connected if {@code resend}; else it fails with its in-doubt
     * code, for a caller that does not wait for the connection.
     */
    public static CompletableFuture<List<OpResult>> read(ClientContext context, List<String> paths, boolean resend) {
        Batch batch = new Batch(context, paths, context.track(new CompletableFuture<>()), resend);
        send(batch, 0);
        return batch.answer();
    }

    /** One read of {@code paths}: its answer, and whether a read lost with the connection is sent again. */
    private record Batch(
            ClientContext context, List<String> paths, CompletableFuture<List<OpResult>> answer, boolean resend) {
        void lost(Code code) {
            answer.completeExceptionally(KeeperException.create(code, paths.get(0)));
        }
    }

    private static void send(Batch batch, int lost) {
        ClientContext context = batch.context();
        if (batch.answer().isDone()) {
            return; // the client was closed
        }
        if (context.server().hasOlderServer()) {
            readEach(batch);
            return;
        }
        CuratorFramework client = context.client();
        String namespace = client.getNamespace();
        List<Op> reads = batch.paths().stream()
                .map(path -> Op.getData(ZKPaths.fixForNamespace(namespace, path)))
                .toList();
        OperationTrace trace = client.getZookeeperClient().startAdvancedTracer("MultiReadImpl-Background");
        long sent = context.server().newerRequestSent();
        try {
            client.getZookeeperClient()
                    .getZooKeeper()
                    .multi(
                            reads,
                            (rc, path, ctx, results) -> {
                                trace.setReturnCode(rc).commit();
                                answered(batch, lost, sent, Code.get(rc), results);
                            },
                            null);
        } catch (Exception e) {
            batch.answer().completeExceptionally(e); // the client is closed, or not started
        }
    }

    private static void answered(Batch batch, int lost, long sent, Code code, List<OpResult> results) {
        ClientContext context = batch.context();
        boolean olderServer = context.server().answeredAsOlderServer(results != null ? Code.OK : code, sent);
        if (results != null) {
            batch.answer().complete(results); // the code is then the first read's error, if any
        } else if (olderServer) {
            readEach(batch);
        } else if (ResultCodes.isInDoubt(code) && batch.resend() && !context.isClosed()) {
            // Lost twice running: perhaps the reply is too big (nodes written by others may hold up to a reply's
            // worth each), which breaks the connection each time. Halves are read instead, down to single nodes.
            context.server().sendNewerAgain(code, () -> {
                if (lost == 0 || batch.paths().size() == 1) {
                    send(batch, lost + 1);
                } else {
                    readHalves(batch);
                }
            });
        } else {
            batch.lost(code);
        }
    }

    private static void readHalves(Batch batch) {
        List<String> paths = batch.paths();
        int half = paths.size() / 2;
        CompletableFuture<List<OpResult>> first = read(batch.context(), paths.subList(0, half), true);
        CompletableFuture<List<OpResult>> second = read(batch.context(), paths.subList(half, paths.size()), true);
        first.thenCombine(second, (a, b) -> {
                    List<OpResult> all = new ArrayList<>(a);
                    all.addAll(b);
                    return all;
                })
                .whenComplete((all, error) -> {
                    if (error != null) {
                        batch.answer().completeExceptionally(ResultCodes.unwrap(error));
                    } else {
                        batch.answer().complete(all);
                    }
                });
    }

    /** One background read per node (Curator retries each across connection loss), gathered as a multi answers. */
    private static void readEach(Batch batch) {
        ClientContext context = batch.context();
        List<String> paths = batch.paths();
        OpResult[] results = new OpResult[paths.size()];
        AtomicInteger left = new AtomicInteger(paths.size());
        AtomicBoolean resent = new AtomicBoolean();
        for (int i = 0; i < paths.size(); i++) {
            int index = i;
            try {
                context.client()
                        .getData()
                        .inBackground((c, event) -> {
                            Code code = Code.get(event.getResultCode());
                            if (ResultCodes.isInDoubt(code)) {
                                // Curator's retries ran out: read the whole batch again once connected, once.
                                if (!batch.resend()) {
                                    batch.lost(code);
                                } else if (!context.isClosed() && resent.compareAndSet(false, true)) {
                                    context.whenConnected(() -> send(batch, 0));
                                }
                                return;
                            }
                            results[index] = code == Code.OK
                                    ? new OpResult.GetDataResult(event.getData(), event.getStat())
                                    : new OpResult.ErrorResult(code.intValue());
                            if (left.decrementAndGet() == 0 && !resent.get()) {
                                batch.answer().complete(Arrays.asList(results));
                            }
                        })
                        .forPath(paths.get(index));
            } catch (Exception e) {
                batch.answer().completeExceptionally(e); // the client is closed, or not started
                return;
            }
        }
    }
}
