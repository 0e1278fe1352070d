CREATE TABLE `event_stats` (
	`store_id` text NOT NULL,
	`bucket` integer NOT NULL,
	`metric` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`store_id`, `bucket`, `metric`)
);
