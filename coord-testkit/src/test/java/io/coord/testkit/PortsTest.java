package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.curator.test.InstanceSpec;
import org.junit.jupiter.api.Test;

class PortsTest {
    @Test
    void everyPortOfAnEnsembleIsItsOwn() throws Exception {
        for (int round = 0; round < 50; round++) {
            List<InstanceSpec> specs = ZooKeeperEnsemble.specs(5);
            Set<Integer> ports = new HashSet<>();
            for (InstanceSpec spec : specs) {
                ports.add(spec.getPort());
                ports.add(spec.getQuorumPort());
                ports.add(spec.getElectionPort());
            }
            assertEquals(15, ports.size(), specs.toString());
            assertEquals(
                    List.of(1, 2, 3, 4, 5),
                    specs.stream().map(InstanceSpec::getServerId).toList());
        }
    }
}
