package io.coord.spring;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;

/** The application of README's Spring Boot test: the {@link Billing} service and Spring Boot's auto-configuration. */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(Billing.class)
class BillingApplication {}
