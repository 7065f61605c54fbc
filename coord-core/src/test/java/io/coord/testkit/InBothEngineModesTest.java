package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.core.internal.ClientContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/** The fixture gives a class that runs in both modes clients of the run's mode. */
@InBothEngineModes
class InBothEngineModesTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void clientsUseTheModeOfTheRun() throws Exception {
        assertEquals(mode, zk.mode());
        assertEquals(mode == EngineMode.VIEW, ClientContext.of(zk.newClient()).usesViews());
        assertEquals(mode.property(), System.getProperty("coord.view"));
    }
}
