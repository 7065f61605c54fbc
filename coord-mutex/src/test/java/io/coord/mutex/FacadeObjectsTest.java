package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.internal.ClientContext;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.WatcherRemoveCuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Curator keeps one facade object per namespace, and makes a new one for a namespace left unused for five minutes,
 * while primitives made with the old one live on. Both objects reach the same znodes over the same connection.
 */
@Timeout(60)
class FacadeObjectsTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void aWaiterOnAnOldFacadeObjectIsGrantedAfterANewObjectOfItsNamespaceStopsUsingThePath() throws Exception {
        String path = ZooKeeperFixture.uniquePath("facades");
        CuratorFramework base = zk.newClient();
        CuratorFramework old = base.usingNamespace("tenant");
        CuratorFramework fresh = newFacadeObject(base, "tenant");
        assertNotSame(old, fresh);
        assertSame(ClientContext.of(old), ClientContext.of(fresh));
        ZooKeeperFixture.lingerViews(fresh, Duration.ofMillis(200)); // of the namespace: no view lingers long here
        ReentrantMutex onOld = new ReentrantMutex(old, path, "old");
        ReentrantMutex onFresh = new ReentrantMutex(fresh, path, "fresh");
        for (int i = 0; i < 2; i++) { // both acquire through a view from the second time on
            onOld.acquireAsync().get(10, TimeUnit.SECONDS).close();
            onFresh.acquireAsync().get(10, TimeUnit.SECONDS).close();
        }

        ReentrantMutex holder = new ReentrantMutex(zk.newClient().usingNamespace("tenant"), path, "holder");
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> waiting = onOld.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        // Long enough for a view the new object had to itself to linger out and drop the path's watch.
        await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5)).until(() -> !waiting.isDone());

        held.close();
        waiting.get(10, TimeUnit.SECONDS).close();
        zk.assertNoLeaks("/tenant" + path);
    }

    /** A context first made for a facade still hears the client's close: leases on the client turn LOST at once. */
    @Test
    void aClientWhoseContextAFacadeMadeFirstStillTellsItsLeasesOfItsClose() throws Exception {
        String path = ZooKeeperFixture.uniquePath("facade-first");
        zk.mode(EngineMode.WATCH); // no view, whose watch would hear the close anyway
        CuratorFramework client = zk.newClient();
        new ReentrantMutex(client.usingNamespace(null), path)
                .acquireAsync()
                .get(10, TimeUnit.SECONDS)
                .close();
        Lease held = new ReentrantMutex(client, path).acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<LeaseState> lost = new CompletableFuture<>();
        held.addStateListener(
                state -> {
                    if (state == LeaseState.LOST) {
                        lost.complete(state);
                    }
                },
                Runnable::run);

        client.close();
        lost.get(10, TimeUnit.SECONDS);
    }

    /**
     * A recipe made on {@code newWatcherRemoveCuratorFramework()} removes the watches it set when it is done. coord
     * sets none through it, so other users of the path keep theirs.
     */
    @Test
    void watchesRemovedThroughAWatcherRemovingFacadeAreNotTheOnesOtherUsersWaitOn() throws Exception {
        String path = ZooKeeperFixture.uniquePath("watcher-removal");
        CuratorFramework client = zk.newClient();
        WatcherRemoveCuratorFramework recipe = client.newWatcherRemoveCuratorFramework();
        ReentrantMutex onRecipe = new ReentrantMutex(recipe, path, "recipe");
        ReentrantMutex onClient = new ReentrantMutex(client, path, "client");
        for (int i = 0; i < 2; i++) { // the second time through the view
            onRecipe.acquireAsync().get(10, TimeUnit.SECONDS).close();
        }
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> waiting = onClient.acquireAsync();
        await().until(() -> holder.participants().size() == 2);

        recipe.removeWatchers();
        held.close();
        waiting.get(10, TimeUnit.SECONDS).close();
        zk.assertNoLeaks(path);
    }

    /** What Curator does after five idle minutes, now: forgets its facade objects, and makes a new one. */
    private static CuratorFramework newFacadeObject(CuratorFramework base, String namespace) throws Exception {
        Object facades = field(base, "namespaceFacadeCache");
        Object cache = field(facades, "cache");
        Class.forName("org.apache.curator.shaded.com.google.common.cache.Cache")
                .getMethod("invalidateAll")
                .invoke(cache);
        return base.usingNamespace(namespace);
    }

    private static Object field(Object owner, String name) throws ReflectiveOperationException {
        Field field = owner.getClass().getDeclaredField(name);
        field.setAccessible(true);
        return field.get(owner);
    }
}
