"""add migrate-cron console tables

Revision ID: 3fdb5266566e
Revises: 9b68037680ff

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, postgresql

# revision identifiers, used by Alembic.
revision: str = '3fdb5266566e'
down_revision: Union[str, Sequence[str], None] = '9b68037680ff'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    # Tables and indexes rendered from migrate_cron/store/schema.py.
    op.create_table('job_workers',
    sa.Column('name', sa.String(length=255).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=255), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=255), 'mysql'), nullable=False),
    sa.Column('host', sa.String(length=255).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=255), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=255), 'mysql'), nullable=False),
    sa.Column('run_as', sa.String(length=255).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=255), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=255), 'mysql'), nullable=True),
    sa.Column('kinds', sa.Text().with_variant(mysql.TEXT(charset='utf8mb4', collation='utf8mb4_nopad_bin'), 'mariadb').with_variant(mysql.TEXT(charset='utf8mb4', collation='utf8mb4_bin'), 'mysql'), nullable=True),
    sa.Column('pid', sa.Integer(), nullable=True),
    sa.Column('concurrency', sa.Integer(), server_default='1', nullable=False),
    sa.Column('in_flight', sa.Integer(), server_default='0', nullable=False),
    sa.Column('heartbeat', sa.Float(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('last_seen', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('stopped_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True),
    sa.PrimaryKeyConstraint('name'),
    mariadb_charset='utf8mb4',
    mariadb_collate='utf8mb4_nopad_bin',
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin'
    )
    op.create_index('job_workers_seen_idx', 'job_workers', ['last_seen'], unique=False)
    op.create_table('job_actions',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('who', sa.String(length=255).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=255), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=255), 'mysql'), nullable=False),
    sa.Column('origin', sa.String(length=255).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=255), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=255), 'mysql'), nullable=False),
    sa.Column('action', sa.String(length=32).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=32), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=32), 'mysql'), nullable=False),
    sa.Column('kind', sa.String(length=200).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=200), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=200), 'mysql'), nullable=True),
    sa.Column('job_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('detail', sa.Text().with_variant(mysql.TEXT(charset='utf8mb4', collation='utf8mb4_nopad_bin'), 'mariadb').with_variant(mysql.TEXT(charset='utf8mb4', collation='utf8mb4_bin'), 'mysql'), nullable=True),
    sa.Column('changed', sa.Integer(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    mariadb_charset='utf8mb4',
    mariadb_collate='utf8mb4_nopad_bin',
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin'
    )
    op.create_index('job_actions_at_idx', 'job_actions', ['at'], unique=False)
    op.create_index('job_actions_job_idx', 'job_actions', ['job_id', 'at'], unique=False)
    op.create_index('job_actions_kind_idx', 'job_actions', ['kind', 'at'], unique=False)
    op.create_table('job_tallies',
    sa.Column('kind', sa.String(length=200).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=200), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=200), 'mysql'), nullable=False),
    sa.Column('what', sa.String(length=32).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=32), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=32), 'mysql'), nullable=False),
    sa.Column('period_start', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('count', sa.Integer(), server_default='0', nullable=False),
    sa.CheckConstraint("what IN ('duplicate-fire', 'overlap-held', 'missed-run', 'missed-skipped')", name='job_tallies_what_check'),
    sa.PrimaryKeyConstraint('kind', 'what', 'period_start'),
    mariadb_charset='utf8mb4',
    mariadb_collate='utf8mb4_nopad_bin',
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin'
    )
    op.create_table('job_trend_periods',
    sa.Column('kind', sa.String(length=200).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=200), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=200), 'mysql'), nullable=False),
    sa.Column('span', sa.Integer(), nullable=False),
    sa.Column('period_start', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('done', sa.Integer(), server_default='0', nullable=False),
    sa.Column('failed', sa.Integer(), server_default='0', nullable=False),
    sa.Column('done_seconds', sa.Double(), nullable=True),
    sa.Column('done_max', sa.Double(), nullable=True),
    sa.Column('done_hist', sa.Text().with_variant(mysql.TEXT(charset='utf8mb4', collation='utf8mb4_nopad_bin'), 'mariadb').with_variant(mysql.TEXT(charset='utf8mb4', collation='utf8mb4_bin'), 'mysql'), nullable=True),
    sa.Column('failed_hist', sa.Text().with_variant(mysql.TEXT(charset='utf8mb4', collation='utf8mb4_nopad_bin'), 'mariadb').with_variant(mysql.TEXT(charset='utf8mb4', collation='utf8mb4_bin'), 'mysql'), nullable=True),
    sa.Column('min_ready_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True),
    sa.PrimaryKeyConstraint('kind', 'span', 'period_start'),
    mariadb_charset='utf8mb4',
    mariadb_collate='utf8mb4_nopad_bin',
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin'
    )
    op.create_index('job_trend_periods_span_idx', 'job_trend_periods', ['span', 'period_start'], unique=False)
    op.add_column('job_attempts', sa.Column('ready_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_column('job_attempts', 'ready_at')
    op.drop_table('job_trend_periods')
    op.drop_table('job_tallies')
    op.drop_table('job_actions')
    op.drop_table('job_workers')
