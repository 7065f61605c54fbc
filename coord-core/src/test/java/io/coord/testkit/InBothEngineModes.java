package io.coord.testkit;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Runs every test of the class once per {@link EngineMode}. The class declares {@code @Parameter EngineMode mode;}
 * and registers a {@link ZooKeeperFixture}, which makes its clients use that mode before each test.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@ParameterizedClass(name = "{0}")
@EnumSource(EngineMode.class)
public @interface InBothEngineModes {}
