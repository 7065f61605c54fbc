package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** One instance for the class: JUnit builds it before any beforeAll, and it may read the static field as it is built. */
@ZooKeeperTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PerClassInstanceTest {
    static ZooKeeperEnsemble zk;
    private final String connectString = zk.connectString(); // read while the instance is built

    @Test
    void theStaticFieldIsSetBeforeTheInstanceIsBuilt() {
        assertEquals(zk.connectString(), connectString);
    }
}
