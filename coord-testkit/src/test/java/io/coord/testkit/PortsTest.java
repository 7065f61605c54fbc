package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.curator.test.InstanceSpec;
import org.junit.jupiter.api.Test;

class PortsTest {
    @Test
    void everyPortOfAnEnsembleIsItsOwnAndNoneIsOneTheSystemHandsOut() throws Exception {
        for (int round = 0; round < 50; round++) {
            List<InstanceSpec> specs = ZooKeeperEnsemble.specs(5);
            try {
                Set<Integer> ports = portsOf(specs);
                assertEquals(15, ports.size(), specs.toString());
                // Below the ports the system hands out itself, which a killed server's port must not become.
                assertTrue(ports.stream().allMatch(port -> port >= 20_000 && port < 32_768), ports.toString());
                assertEquals(
                        List.of(1, 2, 3, 4, 5),
                        specs.stream().map(InstanceSpec::getServerId).toList());
            } finally {
                discard(specs);
            }
        }
    }

    @Test
    void theEnsemblesOfOneJvmNeverShareAPortEvenOneThatIsFreeForNow() throws Exception {
        // 199 ports of this JVM's own slice, so that no other test JVM's servers are disturbed.
        int[] slice = {ZooKeeperEnsemble.portSlice()[0], ZooKeeperEnsemble.portSlice()[0] + 199};
        List<InstanceSpec> first = List.of();
        List<InstanceSpec> second = List.of();
        try {
            // The first ensemble's ports are all free again (as a killed server's are), yet still its own.
            first = ZooKeeperEnsemble.specs(50, slice);
            second = ZooKeeperEnsemble.specs(5, slice);
            Set<Integer> ports = portsOf(first);
            ports.addAll(portsOf(second));
            assertEquals(165, ports.size(), "no port of the second is one of the first's");
        } finally {
            discard(first);
            discard(second);
        }
    }

    @Test
    void aClosedEnsembleLeavesNoFileBehindAndItsPortsFree() throws Exception {
        ZooKeeperEnsemble ensemble = ZooKeeperEnsemble.start(1);
        EmbeddedServer server = ensemble.servers().get(0);
        File root = server.spec().getDataDirectory().getParentFile();
        server.kill();
        server.restart(); // ZooKeeper writes a configuration file at every start, and never deletes it
        ensemble.close();

        assertTrue(!root.exists(), root + " is left");
        // Free: a new ensemble may take the closed one's ports again.
        assertTrue(portsOf(List.of(server.spec())).stream().noneMatch(ZooKeeperEnsemble::isReserved));
    }

    private static Set<Integer> portsOf(List<InstanceSpec> specs) {
        Set<Integer> ports = new HashSet<>();
        for (InstanceSpec spec : specs) {
            ports.add(spec.getPort());
            ports.add(spec.getQuorumPort());
            ports.add(spec.getElectionPort());
        }
        return ports;
    }

    /** Frees the ports, and deletes the directories made for servers that never ran. */
    private static void discard(List<InstanceSpec> specs) {
        ZooKeeperEnsemble.release(specs);
        for (InstanceSpec spec : specs) {
            assertTrue(
                    !spec.getDataDirectory().exists(), spec.getDataDirectory().toString());
        }
    }

    @Test
    void testJvmsRunSideBySidePickFromSlicesOfTheRangeThatNeverOverlap() {
        String fork = System.getProperty("coord.testkit.fork");
        String forks = System.getProperty("coord.testkit.forks");
        try {
            System.setProperty("coord.testkit.forks", "2");
            System.setProperty("coord.testkit.fork", "1");
            assertArrayEquals(new int[] {20_000, 26_384}, ZooKeeperEnsemble.portSlice());
            System.setProperty("coord.testkit.fork", "2");
            assertArrayEquals(new int[] {26_384, 32_768}, ZooKeeperEnsemble.portSlice());
            System.setProperty("coord.testkit.fork", "3"); // no such slice: the whole range
            assertArrayEquals(new int[] {20_000, 32_768}, ZooKeeperEnsemble.portSlice());
            System.setProperty("coord.testkit.forks", "1C"); // a count Surefire reads per core
            System.setProperty("coord.testkit.fork", "2");
            assertArrayEquals(new int[] {20_000, 32_768}, ZooKeeperEnsemble.portSlice());
        } finally {
            restore("coord.testkit.fork", fork);
            restore("coord.testkit.forks", forks);
        }
    }

    private static void restore(String key, String value) {
        if (value == null) {
            System.clearProperty(key);
        } else {
            System.setProperty(key, value);
        }
    }
}
