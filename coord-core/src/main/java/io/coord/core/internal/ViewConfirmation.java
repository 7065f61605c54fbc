package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import org.apache.curator.drivers.OperationTrace;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;

/**
 * Asks, in one read-only multi, whether this client may read each of some nodes: a node it may not read produces no
 * event, so a view must not wait on one. Each node's children are listed, not its data: the server checks the same
 * READ permission, and the reply stays small whatever the nodes hold (their data together could exceed {@code
 * jute.maxbuffer}, which breaks the connection on every send). Curator 5.9 does not wrap a read multi; it goes
 * through the client's ZooKeeper handle, asynchronously so that its answer keeps its place among the session's
 * events, and is traced like Curator's own requests.
 */
final class ViewConfirmation {
    private ViewConfirmation() {}

    /** Calls {@code done} once with a code per node in order (OK, NONODE, NOAUTH, ...), or null if not answered. */
    static void send(ClientContext context, String path, List<SequenceNode> nodes, BiConsumer<Code, List<Code>> done) {
        CuratorFramework client = context.client();
        String base = ZKPaths.fixForNamespace(client.getNamespace(), path);
        List<Op> reads = new ArrayList<>(nodes.size());
        for (SequenceNode node : nodes) {
            reads.add(Op.getChildren(ZKPaths.makePath(base, node.name())));
        }
        OperationTrace trace = client.getZookeeperClient().startAdvancedTracer("ViewConfirmation-Background");
        try {
            client.getZookeeperClient()
                    .getZooKeeper()
                    .multi(
                            reads,
                            (rc, p, ctx, results) -> {
                                trace.setReturnCode(rc).setPath(base).commit();
                                done.accept(Code.get(rc), results == null ? null : codes(results));
                            },
                            null);
        } catch (Exception e) {
            trace.setReturnCode(Code.SYSTEMERROR.intValue()).setPath(base).commit();
            done.accept(Code.SYSTEMERROR, null);
        }
    }

    private static List<Code> codes(List<OpResult> results) {
        List<Code> codes = new ArrayList<>(results.size());
        for (OpResult result : results) {
            codes.add(result instanceof OpResult.ErrorResult error ? Code.get(error.getErr()) : Code.OK);
        }
        return codes;
    }
}
