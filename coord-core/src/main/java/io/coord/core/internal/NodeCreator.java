package io.coord.core.internal;

import java.util.List;
import java.util.function.BiConsumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.ACLBackgroundPathAndBytesable;
import org.apache.curator.framework.api.CreateModable;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.data.Stat;

/**
 * Creates an attempt's EPHEMERAL_SEQUENTIAL nodes: one with a plain create, or several at once in one transaction,
 * which gives them consecutive sequence numbers and makes a multi-permit request all or nothing.
 */
final class NodeCreator {
    /** What a create made: child names in sequence order, and the creation zxid and owner session they share. */
    record Created(List<String> names, long token, long session) {}

    private NodeCreator() {}

    /**
     * Calls {@code done} once, on the event thread, with OK and what was made, or with the failure's code. With
     * {@code makeParents}, a missing path is made as a container; without, the create answers NONODE.
     */
    static void create(
            CuratorFramework client,
            String path,
            String name,
            byte[] data,
            int count,
            boolean makeParents,
            BiConsumer<Code, Created> done)
            throws Exception {
        if (count > 1) {
            createMany(client, path, name, data, count, makeParents, done);
            return;
        }
        CreateModable<ACLBackgroundPathAndBytesable<String>> create =
                makeParents ? client.create().creatingParentContainersIfNeeded() : client.create();
        create.withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                .inBackground((c, event) -> createdOne(event, done))
                .forPath(ZKPaths.makePath(path, name), data);
    }

    private static void createdOne(CuratorEvent event, BiConsumer<Code, Created> done) {
        Code rc = Code.get(event.getResultCode());
        if (rc != Code.OK) {
            done.accept(rc, null);
            return;
        }
        Stat stat = event.getStat();
        done.accept(
                rc,
                new Created(
                        List.of(ZKPaths.getNodeFromPath(event.getName())), stat.getCzxid(), stat.getEphemeralOwner()));
    }

    private static void createMany(
            CuratorFramework client,
            String path,
            String name,
            byte[] data,
            int count,
            boolean mayCreateParent,
            BiConsumer<Code, Created> done)
            throws Exception {
        CuratorOp[] ops = new CuratorOp[count];
        for (int i = 0; i < count; i++) {
            ops[i] = TransactionOps.create(client, ZKPaths.makePath(path, name), CreateMode.EPHEMERAL_SEQUENTIAL, data);
        }
        client.transaction()
                .inBackground((c, event) -> {
                    Code rc = Code.get(event.getResultCode());
                    if (rc == Code.NONODE && mayCreateParent) {
                        // A transaction does not create parents: make the container, then try once more.
                        createParent(
                                client, path, () -> createMany(client, path, name, data, count, false, done), done);
                    } else if (rc != Code.OK) {
                        done.accept(rc, null);
                    } else {
                        List<String> names = event.getOpResults().stream()
                                .map(CuratorTransactionResult::getResultPath)
                                .map(ZKPaths::getNodeFromPath)
                                .toList();
                        readStat(client, path, names, done);
                    }
                })
                .forOperations(ops);
    }

    /** A transaction's create does not return its Stat; the shared creation zxid and owner come from one read. */
    private static void readStat(
            CuratorFramework client, String path, List<String> names, BiConsumer<Code, Created> done) throws Exception {
        client.checkExists()
                .inBackground((c, event) -> {
                    Stat stat = event.getStat();
                    if (stat == null) {
                        Code rc = Code.get(event.getResultCode());
                        done.accept(rc == Code.OK ? Code.NONODE : rc, new Created(names, 0, 0));
                    } else {
                        done.accept(Code.OK, new Created(names, stat.getCzxid(), stat.getEphemeralOwner()));
                    }
                })
                .forPath(ZKPaths.makePath(path, names.get(names.size() - 1)));
    }

    private interface Step {
        void run() throws Exception;
    }

    private static void createParent(CuratorFramework client, String path, Step then, BiConsumer<Code, Created> done)
            throws Exception {
        client.create()
                .creatingParentContainersIfNeeded()
                .withMode(CreateMode.CONTAINER)
                .inBackground((c, event) -> {
                    Code rc = Code.get(event.getResultCode());
                    if (rc == Code.OK || rc == Code.NODEEXISTS) {
                        try {
                            then.run();
                        } catch (Exception e) {
                            done.accept(codeOf(e), null);
                        }
                    } else {
                        done.accept(rc, null);
                    }
                })
                .forPath(path);
    }

    private static Code codeOf(Exception e) {
        return e instanceof KeeperException ke ? ke.code() : Code.SYSTEMERROR;
    }
}
